package cop

import "slices"

// Parallelism is the parallelism the plan offers w workers that take chunk consecutive
// transactions at a time from the shared counter (COP's dispensing), apart from the machine:
// the speedup over one worker if every transaction took the same time and nothing else did,
// each starting once its worker is free and every transaction its reads' planned versions name
// has finished. p must be annotated.
func (p *Plan) Parallelism(w, chunk int) float64 {
	n := p.Len()
	finish := make([]int32, n+1) // in transaction times; finish[0] = 0 stands for the initial values
	free := make([]int32, w)
	for first := 1; first <= n; first += chunk {
		k := 0 // the worker free first takes the next chunk
		for i := range free {
			if free[i] < free[k] {
				k = i
			}
		}
		for id := first; id < min(first+chunk, n+1); id++ {
			start := free[k]
			j := p.Index(TxnID(id))
			for _, v := range p.readVersion[p.txns.readStart[j]:p.txns.readStart[j+1]] {
				start = max(start, finish[v])
			}
			finish[id], free[k] = start+1, start+1
		}
	}
	return float64(n) / float64(slices.Max(free))
}

// chunkCandidates are the larger chunks ChunkFor tries, largest first.
var chunkCandidates = []int{256, 64, 16}

// ChunkFor returns the dispensing chunk for COP on plan with w workers: the largest of
// chunkCandidates whose Parallelism is within 1% of DefaultChunk's, else DefaultChunk. A
// plan whose transactions form one chain (every transaction reads what the one before it
// wrote: kdd-like's near-universal features) offers two workers nothing to run in parallel
// at any chunk, and with DefaultChunk it hands the chain, and the hot parameters' cache lines,
// from one worker to the other every 4 transactions; a large chunk does so every 256, and a
// waiting worker rarely waits for one that is not running. Plans with parallelism to lose keep
// DefaultChunk (docs/BENCHMARKS.md, "Issue 15, fourth pass").
func ChunkFor(plan *Plan, w int) int {
	if w < 2 {
		return DefaultChunk
	}
	base := plan.Parallelism(w, DefaultChunk)
	for _, c := range chunkCandidates {
		if plan.Parallelism(w, c) >= 0.99*base {
			return c
		}
	}
	return DefaultChunk
}
