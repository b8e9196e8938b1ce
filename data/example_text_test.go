package data_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/dprec/dprec/data"
)

// ExampleLoad loads a MovieLens 100K style u.data file (tab-separated, no
// header) and shows what was detected.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "u.data")
	os.WriteFile(p, []byte("196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n"), 0o644)
	s, rep, err := data.Load(p, data.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dims", s.Dims, "observations", s.NNZ(), "format", rep.Format)
	fmt.Println(strings.Join(rep.Detected, "\n"))
	// Output:
	// dims [3 3 149] observations 3 format tsv
	// delimiter tab (detected)
	// no header row (detected: line 1 has numbers)
	// columns user=1 (user) item=2 (item) rating=3 (rating) time=4 (time)
}

// ExampleRandomSplit holds out 25% of a store, reproducibly.
func ExampleRandomSplit() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "r.csv")
	os.WriteFile(p, []byte("user,item,rating\na,x,1\na,y,2\nb,x,3\nb,y,4\n"), 0o644)
	s, _, _ := data.Load(p, data.LoadOptions{})
	sp, err := data.RandomSplit(s, 0.25, rand.NewPCG(1, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("train", len(sp.Train), "test", len(sp.Test))
	// Output:
	// train 3 test 1
}
