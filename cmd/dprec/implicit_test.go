package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// implicitLists parses recommend's CSV output into user -> items.
func implicitLists(t *testing.T, out string) map[string][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]string{}
	for _, r := range rows[1:] {
		lists[r[0]] = append(lists[r[0]], r[2])
	}
	return lists
}

// TestImplicitTrainRecommendSimilar runs the top-N workflow end to end:
// train --objective implicit on an order-3 log, recommend leaving out the
// stored seen items (and --include-seen keeping them), --items with unknown
// ids, a user who has seen every item, similar, and eval's baseline.
func TestImplicitTrainRecommendSimilar(t *testing.T) {
	dir := t.TempDir()
	train, test := trainTestLog(t, dir)
	// User 2000 has seen all 25 items, item 500 on two days.
	b, _ := os.ReadFile(train)
	var extra strings.Builder
	for j := 0; j < 25; j++ {
		extra.WriteString("2000," + itoa(500+j) + ",4,1600000000\n")
	}
	extra.WriteString("2000,500,5,1600086400\n")
	if err := os.WriteFile(train, append(b, extra.String()...), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "imp.arrow")
	out, _, err := trainTestRun(t, "-q", "train", "--objective", "implicit", "--data", train, "--rank", "4", "--iterations", "5", "--seed", "3", "--threads", "2", "--out", model, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum trainImplicitSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.TimeCollapsed || sum.Cells >= sum.Events || sum.Rank != 4 || len(sum.History) != 5 {
		t.Fatalf("summary %+v", sum)
	}
	f, err := models.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Objective != models.ObjectiveImplicit || f.Seen == nil || f.Model.Order() != 2 || f.Model.HasBias {
		t.Fatalf("model header %+v", f.Header)
	}
	seenOf := func(user string) map[string]bool {
		p := models.NewPredictor(f)
		u, _ := p.UserIndex(user)
		out := map[string]bool{}
		for _, j := range f.Seen.Items(u) {
			out[p.ItemID(j)] = true
		}
		return out
	}
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--all-users", "--top", "5")
	if err != nil {
		t.Fatal(err)
	}
	lists := implicitLists(t, out)
	if len(lists["2000"]) != 0 {
		t.Fatalf("user who saw every item got %v", lists["2000"])
	}
	for u, l := range lists {
		s := seenOf(u)
		for _, i := range l {
			if s[i] {
				t.Fatalf("user %s got seen item %s", u, i)
			}
		}
	}
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--user", "2000", "--include-seen", "--top", "3")
	if err != nil || len(implicitLists(t, out)["2000"]) != 3 {
		t.Fatalf("--include-seen: %v %q", err, out)
	}
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--user", "2000")
	if err != nil || strings.TrimSpace(out) != "user,rank,item,score" {
		t.Fatalf("user who saw everything: %v %q", err, out)
	}
	// Candidate filter with two unknown ids and a header.
	cand := filepath.Join(dir, "items.txt")
	os.WriteFile(cand, []byte("movieId\n503\n507\nnope\n99999\n507\n"), 0o644)
	out, errs, err := trainTestRun(t, "recommend", "-m", model, "--all-users", "--items", cand, "--top", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errs, "2 of 4 candidate items are unknown") {
		t.Fatalf("stderr %q", errs)
	}
	for u, l := range implicitLists(t, out) {
		for _, i := range l {
			if i != "503" && i != "507" {
				t.Fatalf("user %s got %s outside the candidates", u, i)
			}
		}
	}
	// Fold-in of a new user's events (implicit solve): those items are left out.
	evs := filepath.Join(dir, "new.csv")
	os.WriteFile(evs, []byte("item,rating\n503,5\n507,1\nnope,3\n"), 0o644)
	out, errs, err = trainTestRun(t, "recommend", "-m", model, "--ratings", evs, "--top", "4")
	if err != nil || !strings.Contains(errs, "implicit objective") || strings.Count(out, "\n") != 5 || strings.Contains(out, ",503,") || strings.Contains(out, ",507,") {
		t.Fatalf("fold-in: %v %q %q", err, out, errs)
	}
	// similar: known item, unknown item (exit 1).
	out, _, err = trainTestRun(t, "-q", "similar", "-m", model, "--item", "503", "--top", "3")
	if err != nil || strings.Count(out, "\n") != 4 || strings.Contains(out, ",503,") {
		t.Fatalf("similar: %v %q", err, out)
	}
	_, _, err = trainTestRun(t, "-q", "similar", "-m", model, "--item", "nope")
	if err == nil || !strings.Contains(err.Error(), "unknown id") {
		t.Fatalf("similar unknown item: %v", err)
	}
	if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() != exitError {
		t.Fatalf("similar unknown item: exit %d", ec.ExitCode())
	}
	_, _, err = trainTestRun(t, "-q", "similar", "-m", model)
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage {
		t.Fatalf("similar without --item/--user: %v", err)
	}
	// eval prints the baseline beside the model.
	out, _, err = trainTestRun(t, "-q", "eval", "-m", model, "--data", test)
	if err != nil || !strings.Contains(out, "most-popular") || !strings.Contains(out, "MAP@10") || !strings.Contains(out, "coverage") {
		t.Fatalf("eval: %v %q", err, out)
	}
	// Flags of the rating objective are refused.
	_, _, err = trainTestRun(t, "-q", "train", "--objective", "implicit", "--data", train, "--epochs", "3", "--out", filepath.Join(dir, "x.arrow"))
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage {
		t.Fatalf("--epochs with implicit: %v", err)
	}
}

// TestRatingModelStoresSeen: a non-private rating model stores its
// training items and recommend leaves them out without --exclude-rated.
func TestRatingModelStoresSeen(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	model := filepath.Join(dir, "r.arrow")
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--rank", "2", "--epochs", "3", "--seed", "1", "--out", model); err != nil {
		t.Fatal(err)
	}
	f, err := models.Load(model)
	if err != nil || f.Seen == nil {
		t.Fatalf("%v: no seen items stored", err)
	}
	out, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--all-users", "--top", "30")
	if err != nil {
		t.Fatal(err)
	}
	p := models.NewPredictor(f)
	for u, l := range implicitLists(t, out) {
		ui, _ := p.UserIndex(u)
		if len(l)+len(f.Seen.Items(ui)) != p.NumItems() {
			t.Fatalf("user %s: %d recommended + %d seen != %d items", u, len(l), len(f.Seen.Items(ui)), p.NumItems())
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestImplicitClickLog trains on a log with no rating column; repeated
// clicks add up (the stored model fingerprint's value total counts them).
func TestImplicitClickLog(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for u := 0; u < 30; u++ {
		for j := 0; j < 12; j++ {
			if (u+j)%3 == 0 {
				b.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(100+j) + "\n")
				if j%4 == 0 {
					b.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(100+j) + "\n") // a repeat
				}
			}
		}
	}
	log := filepath.Join(dir, "clicks.csv")
	os.WriteFile(log, []byte(b.String()), 0o644)
	model := filepath.Join(dir, "c.arrow")
	_, _, err := trainTestRun(t, "-q", "train", "--objective", "implicit", "--data", log, "--columns", "user,item", "--time-unit", "none", "--rank", "2", "--iterations", "3", "--seed", "1", "--out", model)
	if err != nil {
		t.Fatal(err)
	}
	f, err := models.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	events := strings.Count(b.String(), "\n")
	if int(f.Header.Data.Mean*float64(f.Header.Data.NNZ)+0.5) != events || f.Header.Data.NNZ >= events || f.Header.Data.Max != 2 {
		t.Fatalf("data info %+v for %d events: repeats did not add up", f.Header.Data, events)
	}
	out, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--user", "0", "--top", "3")
	if err != nil || strings.Count(out, "\n") != 4 {
		t.Fatalf("recommend: %v %q", err, out)
	}
}

// TestTimelessModelTime: a model without a time mode (the implicit
// objective; a rating model trained with --time-unit none) refuses --time
// in predict, recommend and eval instead of echoing a time it does not use,
// and predict --input drops a pairs file's time column with one note
// (issue 24 item 16); a model with a time mode still takes --time.
func TestTimelessModelTime(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	imp, flat, timed := filepath.Join(dir, "imp.arrow"), filepath.Join(dir, "flat.arrow"), filepath.Join(dir, "timed.arrow")
	for _, args := range [][]string{
		{"train", "--objective", "implicit", "--data", train, "--rank", "2", "--iterations", "2", "--seed", "1", "--out", imp},
		{"train", "--data", train, "--time-unit", "none", "--rank", "2", "--epochs", "2", "--seed", "1", "--out", flat},
		{"train", "--data", train, "--rank", "2", "--epochs", "2", "--seed", "1", "--out", timed},
	} {
		if _, errs, code := cliRun(t, append(args, "-q")...); code != exitOK {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	for _, m := range []string{imp, flat} {
		for _, args := range [][]string{
			{"predict", "-m", m, "--user", "1000", "--item", "500", "--time", "2020-09-14"},
			{"recommend", "-m", m, "--user", "1000", "--time", "2020-09-14"},
			{"eval", "-m", m, "--data", train, "--time", "2020-09-14"},
		} {
			out, errs, code := cliRun(t, append(args, "-q")...)
			if code != exitUsage || !strings.Contains(errs, "has no time mode") || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, no time mode", args, code, out, errs, exitUsage)
			}
		}
	}
	pairs := filepath.Join(dir, "pairs.csv")
	if err := os.WriteFile(pairs, []byte("user,item,time\n1000,500,2020-09-14\n1001,501,2020-09-15\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cliRun(t, "predict", "-m", imp, "--input", pairs, "--json")
	var preds []predictResult
	if code != exitOK || json.Unmarshal([]byte(out), &preds) != nil || len(preds) != 2 || strings.Count(errs, "time column is ignored") != 1 {
		t.Fatalf("pairs with times: exit %d\n%s\n%s", code, out, errs)
	}
	for _, p := range preds {
		if p.Time != nil {
			t.Errorf("time %d echoed for a model without a time mode", *p.Time)
		}
	}
	out, errs, code = cliRun(t, "predict", "-m", timed, "--user", "1000", "--item", "500", "--time", "2020-09-14", "--json", "-q")
	if code != exitOK || !strings.Contains(out, `"time":1600041600`) {
		t.Errorf("a model with a time mode: exit %d %s %s", code, out, errs)
	}
}

// TestImplicitPrivateTrainEval runs the private implicit workflow: train
// --objective implicit --privacy als at the user unit on a public
// catalogue (a billboard model: one placeholder user, no seen items, the
// report), eval folding every test user in from --train, and the
// refusals (entry unit, a fixed confidence).
func TestImplicitPrivateTrainEval(t *testing.T) {
	dir := t.TempDir()
	train, test := trainTestLog(t, dir)
	cat := filepath.Join(dir, "items.csv")
	var b strings.Builder
	for j := 0; j < 25; j++ {
		b.WriteString(itoa(500+j) + "\n")
	}
	if err := os.WriteFile(cat, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "pimp.arrow")
	base := []string{"-q", "train", "--objective", "implicit", "--data", train, "--privacy", "als", "--epsilon", "5", "--delta", "1e-5", "--time-unit", "none", "--rank", "3", "--seed", "3"}
	out, _, err := trainTestRun(t, append(base, "--privacy-unit", "user", "--max-ratings-per-user", "25", "--items", cat, "--out", model, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var sum trainImplicitSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Privacy == nil || sum.Privacy.Mode != "implicit" || sum.Privacy.Unit != "user" || sum.Privacy.Epsilon > 5+1e-9 || sum.Dims[0] != 1 || sum.Dims[1] != 25 {
		t.Fatalf("summary %+v, privacy %+v", sum, sum.Privacy)
	}
	f, err := models.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if f.Seen != nil || f.Dicts[0].Len() != 1 || !f.Billboard() || f.Header.Data.HasStats() {
		t.Fatalf("the model file releases users: seen %v, %d users, billboard %v", f.Seen, f.Dicts[0].Len(), f.Billboard())
	}
	for _, v := range f.Model.Factors[0] {
		if v != 0 {
			t.Fatal("a user row was released")
		}
	}
	out, _, err = trainTestRun(t, "-q", "eval", "--model", model, "--data", test, "--train", train, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res models.EvalResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.RankedUsers == 0 || res.SkippedUsers != 0 || !(res.NDCG > 0) {
		t.Fatalf("eval of the private model: %+v", res)
	}
	if _, _, err := trainTestRun(t, "-q", "eval", "--model", model, "--data", test); err == nil {
		t.Error("eval of a billboard model without --train was accepted")
	}
	// A dated log needs no public time range: the time mode is dropped.
	out, _, err = trainTestRun(t, "-q", "train", "--objective", "implicit", "--data", train, "--privacy", "als", "--epsilon", "5", "--delta", "1e-5", "--rank", "3", "--privacy-unit", "user", "--max-ratings-per-user", "25", "--items", cat, "--out", filepath.Join(dir, "dated.arrow"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.TimeCollapsed || sum.Privacy == nil {
		t.Fatalf("dated log: %v, summary %+v", err, sum)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(dir, "x.arrow")}, "user unit only"},
		{[]string{"--privacy-unit", "user", "--max-ratings-per-user", "25", "--items", cat, "--confidence", "log", "--out", filepath.Join(dir, "y.arrow")}, "--confidence is not used"},
	} {
		_, _, err := trainTestRun(t, append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
