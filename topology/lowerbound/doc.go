// Package lowerbound computes the commit-latency lower bound of a geo-replicated transactional
// store and the Helios commit offsets derived from it (dissertation Chapter 4, §4.2 and §4.4;
// spec helios-message-futures.md §3, §4.4 and §6.1.3).
//
// Lemma 1 of Chapter 4 shows that for any two datacenters A and B the commit latencies of a
// protocol that does not abort everything satisfy
//
//	L_A + L_B ≥ RTT(A,B)
//
// because a transaction at B that requests and commits inside A's critical zone (length
// RTT − L_A) and a transaction at A can otherwise not see each other. Only the pairwise sums are
// bounded, so a single DC may commit in 0 ms. MAO ("minimum average optimal", Problem 1) picks
// the latencies with the smallest sum subject to these constraints; Helios then realises those
// latencies through commit offsets co_A[B] = L_A − RTT(A,B)/2 (Eq. 4.5), which satisfy Rule 1
// (co_A[B] + co_B[A] ≥ 0) for any RTT estimate because L is feasible.
//
// MAO solves the linear program with gonum's simplex; MAOByVertices solves it exactly by vertex
// enumeration and serves as an independent check and as the solver of the throughput-oriented
// variant, whose objective is convex and therefore maximised at a vertex.
//
// All times are milliseconds as float64, and datacenters are indexed 0..n−1; names are used only
// in error messages.
package lowerbound
