package parquetw

import "encoding/binary"

// appendHybrid appends vals in the RLE / bit-packing hybrid encoding of the
// Parquet format (the definition levels of data pages and the indices of
// dictionary-encoded pages) with the given bit width (1..32). Runs of 8 or
// more equal values, and an all-equal tail, become RLE runs; the rest is
// bit-packed in groups of 8, at most 63 groups a run, the last group padded
// with zeros only at the very end of vals (a reader stops at its count).
func appendHybrid(dst []byte, vals []uint32, width int) []byte {
	n := len(vals)
	runAt := func(i int) int {
		j := i + 1
		for j < n && vals[j] == vals[i] {
			j++
		}
		return j - i
	}
	valBytes := (width + 7) / 8
	for i := 0; i < n; {
		if r := runAt(i); r >= 8 || i+r == n {
			dst = binary.AppendUvarint(dst, uint64(r)<<1)
			v := vals[i]
			for k := 0; k < valBytes; k++ {
				dst = append(dst, byte(v>>(8*k)))
			}
			i += r
			continue
		}
		start, groups := i, 0
		for i < n && groups < 63 {
			if groups > 0 && runAt(i) >= 8 {
				break
			}
			i += 8
			groups++
		}
		dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
		dst = bitPack(dst, vals[start:min(i, n)], groups*8, width)
		i = min(i, n)
	}
	return dst
}

// bitPack packs vals (padded with zeros to count values) LSB first, width
// bits each.
func bitPack(dst []byte, vals []uint32, count, width int) []byte {
	var acc uint64
	var bits int
	for k := 0; k < count; k++ {
		var v uint32
		if k < len(vals) {
			v = vals[k]
		}
		acc |= uint64(v) << bits
		bits += width
		for bits >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
	if bits > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}
