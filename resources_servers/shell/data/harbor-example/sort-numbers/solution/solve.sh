#!/bin/bash
# Deliberately wrong: a text sort puts 100 before 42.
sort numbers.txt > sorted.txt
