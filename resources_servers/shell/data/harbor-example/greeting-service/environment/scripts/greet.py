import os
import sys

settings = dict(line.strip().split('=', 1) for line in open('data/team.conf') if '=' in line)
if sys.argv[1:] == ['--self-test']:
    assert 'team' in settings, 'data/team.conf names no team'
    sys.exit(0)
print(f"{os.environ['GREETING_PREFIX']} {settings['team']}")
