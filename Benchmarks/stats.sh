# Sourced by the benchmark scripts: the small figures helpers they share.
#
#   median [FILE]        the median of the numbers in FILE (one per line), or on standard input
#   figure NAME LINE     the number after NAME= in LINE (the load clients print name=value pairs)

median() { sort -g "$@" | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

figure() { sed -n 's/.*'"$1"'=\([0-9.]*\).*/\1/p' <<<"$2"; }
