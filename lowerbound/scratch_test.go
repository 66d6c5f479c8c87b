package lowerbound
import ("testing";"math";"math/rand/v2")
func TestScratchMany(t *testing.T){
  fails := 0
  for seed := uint64(0); seed < 40000; seed++ {
    r := rand.New(rand.NewPCG(seed, 99))
    n := 2 + r.IntN(5)
    integer := seed%3 != 0
    rtt := randomMetric(r, n, []float64{3, 10, 30, 400, 1000}[seed%5], integer)
    if seed%7 == 0 { // non-metric random
      for i := range n { for j := i+1; j < n; j++ { v := math.Round(r.Float64()*100); rtt[i][j], rtt[j][i] = v, v } }
    }
    a, e1 := MAO(rtt); b, e2 := MAOByVertices(rtt)
    if e1 != nil || e2 != nil { t.Log(seed, rtt, e1, e2); fails++; continue }
    for i := range a.LatencyMs { if math.Abs(a.LatencyMs[i]-b.LatencyMs[i]) > 1e-6 || (integer && a.LatencyMs[i] != b.LatencyMs[i]) { t.Log("mismatch", seed, rtt, a, b); fails++; break } }
  }
  t.Log("fails", fails)
}
func TestScratchLarge(t *testing.T){
  fails := 0
  for seed := uint64(0); seed < 300; seed++ {
    r := rand.New(rand.NewPCG(seed, 7))
    n := 7 + r.IntN(20)
    rtt := randomMetric(r, n, []float64{3, 10, 30, 400, 1000}[seed%5], seed%2 == 0)
    a, e1 := MAO(rtt)
    if e1 != nil { t.Log(seed, n, e1); fails++; continue }
    if err := Feasible(a.LatencyMs, rtt); err != nil { t.Log(seed, err); fails++ }
  }
  t.Log("fails", fails)
}
