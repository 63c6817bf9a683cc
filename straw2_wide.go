package chash

// The wide path scores eight nodes at a time, in the eight 64-bit lanes of
// a vector register (AVX-512 on amd64, see straw2_amd64.s), for the two
// rankings that need no weights: the best node (straw2.best) and the best
// three (appendFew). Each lane keeps its own best, or best three, of the
// nodes whose index is the lane's mod 8 (the last len mod 8 nodes take
// the first lanes of a masked vector); the lanes are then merged.
//
// It is taken only when no two ID hashes are equal (straw2.collide is
// clear). mix64 is a bijection, so the scores of one key are then all
// distinct and no tie rule is needed; and at most one node scores 0, which
// with at least 8 nodes is never among the best three, so 0 can stand for
// a lane slot that holds no node yet.

// wideMin is the least number of nodes for which the wide path is taken:
// one vector's worth.
const wideMin = 8

// wideChunk is how many nodes a kernel call scores: assembly cannot be
// preempted, so a placer of millions of nodes is scored in calls of a few
// tens of microseconds each.
const wideChunk = 1 << 16

// wideBest is best8's state: per lane, the best score so far, its node's
// index, and the index of the lane's next node.
type wideBest struct {
	m, i, next [8]uint64
}

// wideTop3 is top3x8's state: per lane, the best three scores so far,
// best first, their nodes' indexes, and the index of the lane's next node.
type wideTop3 struct {
	t, i [3][8]uint64
	next [8]uint64
}

// bestWide returns the index of the node that ranks first for h, as
// straw2.best does, for at least wideMin seeds of which no two are equal.
// straw2.best itself calls the kernel for up to wideChunk seeds.
func bestWide(h uint64, seeds []uint64) int {
	var st wideBest
	var bi uint64
	for at := 0; at < len(seeds); at += wideChunk {
		_, bi = best8(h, seeds[at:min(at+wideChunk, len(seeds))], &st, at > 0)
	}
	return int(bi)
}

// top3Wide returns the indexes of the three nodes that rank first for h,
// best first, as appendFew's best3 finds them, for at least wideMin seeds
// of which no two are equal.
func top3Wide(h uint64, seeds []uint64) [3]uint64 {
	var i0, i1, i2 uint64
	if len(seeds) <= wideChunk {
		i0, i1, i2 = top3x8(h, seeds, nil, false)
		return [3]uint64{i0, i1, i2}
	}
	var st wideTop3
	for at := 0; at < len(seeds); at += wideChunk {
		i0, i1, i2 = top3x8(h, seeds[at:min(at+wideChunk, len(seeds))], &st, at > 0)
	}
	return [3]uint64{i0, i1, i2}
}

// keep3 returns the best three of t0 > t1 > t2 and m, with their indexes,
// by conditional moves: which slot m takes, if any, is unpredictable.
func keep3(m, i, t0, t1, t2, i0, i1, i2 uint64) (uint64, uint64, uint64, uint64, uint64, uint64) {
	if m > t2 {
		t2, i2 = m, i
	}
	if m > t1 {
		t2, i2, t1, i1 = t1, i1, m, i
	}
	if m > t0 {
		t1, i1, t0, i0 = t0, i0, m, i
	}
	return t0, t1, t2, i0, i1, i2
}

// best8Go is best8 written in Go, lane by lane: the model the assembly is
// tested against, and the kernel where there is no assembly.
func best8Go(h uint64, seeds []uint64, st *wideBest, resume bool) (best, bi uint64) {
	if st == nil {
		st = new(wideBest)
	}
	if !resume {
		*st = wideBest{next: [8]uint64{0, 1, 2, 3, 4, 5, 6, 7}}
	}
	for at := 0; at < len(seeds); at += 8 {
		for l := range min(8, len(seeds)-at) {
			if m := mix64(h ^ seeds[at+l]); m > st.m[l] {
				st.m[l], st.i[l] = m, st.next[l]
			}
		}
		for l := range st.next {
			st.next[l] += 8
		}
	}
	for l, m := range st.m {
		if m > best {
			best, bi = m, st.i[l]
		}
	}
	return best, bi
}

// top3x8Go is top3x8 written in Go, lane by lane.
func top3x8Go(h uint64, seeds []uint64, st *wideTop3, resume bool) (i0, i1, i2 uint64) {
	if st == nil {
		st = new(wideTop3)
	}
	if !resume {
		*st = wideTop3{next: [8]uint64{0, 1, 2, 3, 4, 5, 6, 7}}
	}
	t, ix := &st.t, &st.i
	for at := 0; at < len(seeds); at += 8 {
		for l := range min(8, len(seeds)-at) {
			t[0][l], t[1][l], t[2][l], ix[0][l], ix[1][l], ix[2][l] = keep3(mix64(h^seeds[at+l]), st.next[l],
				t[0][l], t[1][l], t[2][l], ix[0][l], ix[1][l], ix[2][l])
		}
		for l := range st.next {
			st.next[l] += 8
		}
	}
	var t0, t1, t2 uint64
	for r := range t {
		for l, m := range t[r] {
			t0, t1, t2, i0, i1, i2 = keep3(m, ix[r][l], t0, t1, t2, i0, i1, i2)
		}
	}
	return i0, i1, i2
}
