package tdigest

import "github.com/statsblob/statsblob/voi"

// AppendMean exposes appendMean to the tests.
var AppendMean = appendMean

// CachedWalks returns the slots Iterator.Next and nextInOrder visit in
// CachedOrder.
func CachedWalks(data []byte, dt voi.DType) (next, inOrder []int) {
	for k := range 2 {
		it, err := Iter(data, dt, CachedOrder)
		if err != nil {
			return nil, nil
		}
		var got []int
		for more := it.Next(); more; {
			got = append(got, it.cur)
			if k == 0 {
				more = it.Next()
			} else {
				more = it.nextInOrder()
			}
		}
		if k == 0 {
			next = got
		} else {
			inOrder = got
		}
	}
	return next, inOrder
}
