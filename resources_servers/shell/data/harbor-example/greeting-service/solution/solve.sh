#!/bin/bash
python3 greet.py > out/greeting.txt
echo "status=ready" >> data/team.conf
