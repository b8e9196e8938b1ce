package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
)

// easeBlockLog writes a click log (user,item, no rating) with structure a
// popularity ranking cannot see: 300 users in 6 blocks of 12 items take 5
// items of their block, and each of 8 popular items with probability 1/2;
// the test part holds one more block item per user.
func easeBlockLog(t *testing.T, dir string) (train, test string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var tr, te strings.Builder
	tr.WriteString("user,item\n")
	te.WriteString("user,item\n")
	for u := 0; u < 300; u++ {
		perm := rng.Perm(12)
		for k := 0; k < 6; k++ {
			row := strconv.Itoa(u) + "," + strconv.Itoa(100+(u%6)*12+perm[k]) + "\n"
			if k == 5 {
				te.WriteString(row)
			} else {
				tr.WriteString(row)
			}
		}
		for p := 0; p < 8; p++ {
			if rng.IntN(2) == 0 {
				tr.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(900+p) + "\n")
			}
		}
	}
	train, test = filepath.Join(dir, "tr.csv"), filepath.Join(dir, "te.csv")
	for p, s := range map[string]string{train: tr.String(), test: te.String()} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return train, test
}

// TestTrainEASE runs train --objective ease (lambda chosen on validation),
// eval (NDCG@10 far above most-popular: fails if the ranking degrades to
// popularity), recommend, similar, export, and the refusals.
func TestTrainEASE(t *testing.T) {
	dir := t.TempDir()
	train, test := easeBlockLog(t, dir)
	model := filepath.Join(dir, "ease.arrow")
	out, _, err := trainTestRun(t, "-q", "train", "--objective", "ease", "--columns", "user,item", "--data", train, "--out", model, "--json", "--seed", "1")
	if err != nil {
		t.Fatal(err)
	}
	var sum trainEASESummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Objective != models.ObjectiveItemItem || !sum.Result.Chosen || len(sum.Result.Grid) != 7 || sum.Result.Items != 80 {
		t.Fatalf("summary %+v", sum)
	}
	out, _, err = trainTestRun(t, "-q", "eval", "-m", model, "--columns", "user,item", "--data", test, "--threshold", "0", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev models.EvalResult
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.RankedUsers != 300 || ev.Popularity == nil || !(ev.NDCG > 0.15) || !(ev.NDCG > 5*ev.Popularity.NDCG) {
		t.Fatalf("EASE NDCG@10 %.4f, most-popular %+v: the ranking degraded toward popularity", ev.NDCG, ev.Popularity)
	}
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--user", "0", "--top", "3")
	if err != nil || len(strings.Split(strings.TrimSpace(out), "\n")) != 4 {
		t.Fatalf("recommend: %v %q", err, out)
	}
	out, _, err = trainTestRun(t, "-q", "similar", "-m", model, "--item", "100", "--top", "3")
	if err != nil {
		t.Fatalf("similar: %v", err)
	}
	for _, row := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		// Item 100 is in block 0: items 100..111.
		if j, _ := strconv.Atoi(strings.Split(row, ",")[2]); j < 100 || j > 111 {
			t.Fatalf("similar to item 100 leaves its block: %q", out)
		}
	}
	if _, _, err := trainTestRun(t, "-q", "export", model, filepath.Join(dir, "exp")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "exp", models.ExportItemWeights)); err != nil {
		t.Fatal(err)
	}
	// A given lambda is used as is; a flag of another objective is refused;
	// a closed form beyond --max-memory is refused with its figure.
	out, _, err = trainTestRun(t, "-q", "train", "--objective", "ease", "--lambda", "30", "--columns", "user,item", "--data", train, "--out", filepath.Join(dir, "l.arrow"), "--json")
	if err != nil || !strings.Contains(out, `"lambda": 30,`) {
		t.Fatalf("--lambda 30: %v %s", err, out)
	}
	if _, _, err := trainTestRun(t, "-q", "train", "--objective", "ease", "--rank", "5", "--columns", "user,item", "--data", train, "--out", filepath.Join(dir, "r.arrow")); err == nil || !strings.Contains(err.Error(), "--rank is not used") {
		t.Fatalf("--rank with ease: %v", err)
	}
	if _, _, err := trainTestRun(t, "-q", "train", "--objective", "implicit", "--lambda", "5", "--columns", "user,item", "--data", train, "--out", filepath.Join(dir, "i.arrow")); err == nil || !strings.Contains(err.Error(), "--lambda is for --objective ease") {
		t.Fatalf("--lambda with implicit: %v", err)
	}
	_, _, err = trainTestRun(t, "-q", "train", "--objective", "ease", "--lambda", "1", "--max-memory", "250KiB", "--columns", "user,item", "--data", train, "--out", filepath.Join(dir, "m.arrow"))
	if err == nil || !strings.Contains(err.Error(), "closed form over 80 items needs about") {
		t.Fatalf("memory refusal: %v", err)
	}
}
