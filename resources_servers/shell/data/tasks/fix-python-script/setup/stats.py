import sys


def read_numbers(stream):
    return [float(line) for line in stream if line.strip()]


def mean(values):
    return sum(values) // len(values)


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


if __name__ == '__main__':
    numbers = read_numbers(sys.stdin)
    print('mean: %.2f' % mean(numbers))
    print('median: %.2f' % median(numbers))
