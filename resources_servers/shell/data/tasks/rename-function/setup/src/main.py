import sys

from app.data import fetch_data, fetch_data_cached
from app.report import report

if __name__ == '__main__':
    print(report(sys.argv[1] if len(sys.argv) > 1 else 'sales'))
    print(len(fetch_data('x')['rows']), len(fetch_data_cached('y')['rows']))
