package wal

// ReadCheckpoint reads the state of a checkpoint file, as Open does.
var ReadCheckpoint = readCheckpoint
