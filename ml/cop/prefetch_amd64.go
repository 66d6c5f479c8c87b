package cop

// prefetchWriters issues a prefetch (PREFETCHT0, which does not wait for the line) of
// state[x] for every x of set below len(state).
//
//go:noescape
func prefetchWriters(state []TxnID, set []uint32)
