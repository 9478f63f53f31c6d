# bench/lib.sh — shared by the bench scripts that measure memory (sourced).

# settle BIN replaces the binary the linker has just written with a copy of
# it. The linker's output sits in the page cache in large folios, and a
# process running it maps them whole: a fresh llmprof is ~17 MiB more
# resident than the same bytes copied or read back from disk (`llmprof
# --help`: 37.6 against 19.5 MiB, Linux 6.18 on ext4), which an installed
# binary does not pay. The copy measures what it does.
settle() {
	cp "$1" "$1.settled"
	mv "$1.settled" "$1"
}
