package models

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// TestPairBiasChecks: a model whose pair keys are out of order, outside the
// modes, or on modes the predictor does not serve is refused on save; a
// header announcing more pair rows than the file can hold, or a pair bias
// on a model without biases, is refused on load before anything is
// allocated from it.
func TestPairBiasChecks(t *testing.T) {
	base := func() *File { return testFile(t, decomposition.CP, []int{5, 6, 4}, []int{2}, true, 21) }
	for name, edit := range map[string]func(m *decomposition.Model){
		"unsorted":   func(m *decomposition.Model) { k := m.Pairs[0].Keys; k[0], k[1] = k[1], k[0] },
		"outside":    func(m *decomposition.Model) { m.Pairs[0].Keys[len(m.Pairs[0].Keys)-1] = 99 << 32 },
		"user-item":  func(m *decomposition.Model) { m.Pairs[0].B = 1 },
		"no-biases":  func(m *decomposition.Model) { m.HasBias = false },
		"bad period": func(m *decomposition.Model) { m.Pairs[1].Div = 0 },
	} {
		f := base()
		if len(f.Model.Pairs) != 2 || len(f.Model.Pairs[0].Keys) < 2 {
			t.Fatal("test file without pair biases")
		}
		edit(f.Model)
		var buf bytes.Buffer
		if err := Write(&buf, f); err == nil {
			t.Errorf("%s: written", name)
		}
	}
	re := regexp.MustCompile(`"count":\d+`)
	for name, repl := range map[string]string{"huge count": `"count":99999999999`, "short count": `"count":1`} {
		var buf bytes.Buffer
		err := write(&buf, base(), "1", func(h []byte) []byte { return re.ReplaceAll(h, []byte(repl)) })
		if err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if err := seal(b); err != nil {
			t.Fatal(err)
		}
		_, err = Decode(b)
		if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: %v", name, err)
		}
		if name == "huge count" && (err == nil || !strings.Contains(err.Error(), "pair")) {
			t.Errorf("%s: error %v does not name the pair bias", name, err)
		}
	}
}
