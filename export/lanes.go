package export

// Perfetto draws the slices of one thread (and of one async cookie) as a
// stack, so they must nest: two slices on a track either are disjoint or one
// contains the other. Real traces break that — NVTX start/end ranges overlap
// freely, OTLP siblings run concurrently, clock jitter makes a child stick
// out of its parent by a few ns — and a slice that does not nest is dropped
// or misdrawn. packLanes spreads such slices over extra lanes (overflow
// tracks) instead.

// interval is one slice to place. parent is the index of the slice it should
// nest under (-1: none), used when lanes must follow the span tree.
type interval struct {
	start, end int64
	parent     int32
}

// nesting says how slices may share a lane.
type nesting uint8

const (
	// nestContained: a slice nests under any slice that contains it (a
	// thread's call stack: NVTX ranges around API calls).
	nestContained nesting = iota
	// nestParent: a slice nests only directly under its parent (OTLP spans:
	// concurrent requests must not appear nested just because their times
	// do).
	nestParent
	// nestNever: slices in a lane are disjoint (a GPU stream runs one op at
	// a time; overlapping ops are drawn side by side, not one inside the
	// other).
	nestNever
)

// packLanes assigns each interval a lane so that within a lane intervals are
// disjoint or nested as mode allows. Intervals must be ordered by start,
// then longer first. It returns the lane of each interval and the number of
// lanes, and runs in O(n · lanes).
func packLanes(items []interval, mode nesting) ([]int32, int) {
	lanes := make([]int32, len(items))
	var stacks [][]int32
	// pop closes the slices of lane l that ended by start. A slice that
	// starts at the same instant stays open: the one arriving now nests in
	// it (the order puts the longer first).
	pop := func(l int, start int64) {
		s := stacks[l]
		for len(s) > 0 && items[s[len(s)-1]].end <= start && items[s[len(s)-1]].start < start {
			s = s[:len(s)-1]
		}
		stacks[l] = s
	}
	for i, it := range items {
		placed := -1
		if mode == nestParent && it.parent >= 0 && int(it.parent) < i {
			l := int(lanes[it.parent])
			pop(l, it.start)
			s := stacks[l]
			if len(s) > 0 && s[len(s)-1] == it.parent && items[it.parent].end >= it.end {
				placed = l
			}
		}
		for l := 0; placed < 0 && l < len(stacks); l++ {
			pop(l, it.start)
			s := stacks[l]
			switch {
			case len(s) == 0:
				placed = l
			case mode == nestContained && items[s[len(s)-1]].end >= it.end && items[s[len(s)-1]].start <= it.start:
				placed = l
			}
		}
		if placed < 0 {
			placed = len(stacks)
			stacks = append(stacks, nil)
		}
		stacks[placed] = append(stacks[placed], int32(i))
		lanes[i] = int32(placed)
	}
	return lanes, len(stacks)
}
