package lowerbound
import ("testing";"gonum.org/v1/gonum/optimize/convex/lp")
func TestScratchOne(t *testing.T){
  rtt := [][]float64{{0, 284, 353}, {284, 0, 637}, {353, 637, 0}}
  n := 3
  tol := tolerance(rtt)
  rows := append(pairRows(rtt, n+1), capRows(n)...)
  objectives := [][]float64{{1,1,1,0}, unit(4,3), unit(4,0), unit(4,1), unit(4,2)}
  for k, c := range objectives {
    x, err := simplexMin(c, rows)
    t.Log(k, x, err)
    if err != nil { break }
    rows = append(rows, halfspace{a: negate(c), b: -(dot(c, x) + tol)})
  }
  _ = lp.ErrBland
}
