from app.data import fetch_data


def report(name):
    data = fetch_data(name)
    return '%s: %d rows' % (data['name'], len(data['rows']))
