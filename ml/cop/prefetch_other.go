//go:build !amd64

package cop

// prefetchWriters does nothing where no prefetch is written (see prefetch_amd64.go).
func prefetchWriters(state []TxnID, set []uint32) {}
