package tdigest

// AppendMean exposes appendMean to the tests.
var AppendMean = appendMean
