package completion

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// TestALSTune scores ALS settings on the validation part of the
// ml-latest-small split (never the test part unless DPREC_ALS_TEST=1 for
// the final, chosen settings). Settings come from DPREC_ALS as
// "key=value ..." with keys unit, model, rank, reg, regbias, regtime,
// regpair, regcore, periods, timebias, sweeps, solver (als, gibbs, sgd):
//
//	DPREC_ALS="unit=day rank=20 reg=0.1" go test -run TestALSTune -v ./completion/
func TestALSTune(t *testing.T) {
	spec, ok := os.LookupEnv("DPREC_ALS")
	if !ok {
		t.Skip("set DPREC_ALS to run")
	}
	kv := map[string]string{"unit": "day", "model": "cp", "rank": "10"}
	for _, f := range strings.Fields(spec) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	fl := func(k string) float64 {
		v, _ := strconv.ParseFloat(kv[k], 64)
		return v
	}
	unit, err := data.ParseTimeUnit(kv["unit"])
	if err != nil {
		t.Fatal(err)
	}
	train, valid, test := movieLensSplit(t, unit)
	s := &Settings{Threads: 2, Solver: SolverALS, Reg: fl("reg"), RegBias: fl("regbias"), RegTime: fl("regtime"),
		RegPair: fl("regpair"), RegCore: fl("regcore"), ItemPeriods: int(fl("periods")), Epochs: int(fl("sweeps"))}
	switch kv["solver"] {
	case "gibbs":
		s.Solver = SolverGibbs
		s.BurnIn = int(fl("burnin"))
	case "sgd":
		s.Solver = SolverSGD
	}
	if kv["timebias"] == "off" {
		s.TimeBiases = ToggleOff
	}
	r, _ := strconv.Atoi(kv["rank"])
	got, res := trainMovieLens(t, decomposition.Kind(kv["model"]), repeatRank(r, train.Order()), s, train, valid, test)
	var b strings.Builder
	for _, h := range res.History {
		fmt.Fprintf(&b, " %.4f", h.ValidRMSE)
	}
	t.Logf("%s: valid per sweep%s", spec, b.String())
	t.Logf("%s: saved model valid RMSE %.4f, ranks %v", spec, RMSE(res.Model, valid, 2), res.Model.Ranks)
	sec := 0.0
	for _, h := range res.History {
		sec += h.Seconds
	}
	t.Logf("%s: best sweep %d valid %.4f (%.3fs/sweep on average)", spec, res.BestEpoch, res.History[res.BestEpoch-1].ValidRMSE, sec/float64(len(res.History)))
	if kv["refit"] == "1" {
		all := data.Concat(train, valid)
		s2 := res.Settings
		s2.Epochs, s2.Patience = res.BestEpoch, -1
		m, err := decomposition.NewModel(decomposition.Kind(kv["model"]), all.Dims, repeatRank(r, all.Order()), true)
		if err != nil {
			t.Fatal(err)
		}
		m.ClampLo, m.ClampHi = 0.5, 5
		if _, err := Train(all, nil, m, &s2, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		got = RMSE(m, test, 2)
	}
	if os.Getenv("DPREC_ALS_TEST") == "1" {
		t.Logf("%s: TEST RMSE %.4f", spec, got)
	}
}
