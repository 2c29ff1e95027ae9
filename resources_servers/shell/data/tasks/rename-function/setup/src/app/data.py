def fetch_data(name):
    """Load the named dataset (a stand-in for a real loader)."""
    return {'name': name, 'rows': [1, 2, 3]}


def fetch_data_cached(name, _cache={}):
    if name not in _cache:
        _cache[name] = fetch_data(name)
    return _cache[name]
