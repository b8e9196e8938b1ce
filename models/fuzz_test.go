package models

import (
	"errors"
	"os"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// FuzzDecode feeds models.Decode arbitrary bytes, once as given (the seal
// rejects almost every mutation) and once re-sealed, as a deliberate edit
// would be, so that the mutations reach the footer check, the Arrow
// decoder and the row checks. Decode must return a model or an error
// wrapping ErrFormat, ErrChecksum or ErrVersion, never panic, crash or
// allocate beyond its cap. Seeds: testdata/fuzz/FuzzDecode (a Tucker and a
// CP model and the cyclic-children file of TestFooterCyclicChildren) and
// the golden files tucker3.arrow, cp3-seen-v1.arrow (seen items in the
// metadata) and cp3-seen-v2.arrow (seen rows).
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"tucker3.arrow", "cp3-seen-v1.arrow", "cp3-seen-v2.arrow"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Add(encode(f, testFile(f, decomposition.CP, []int{3, 2}, []int{1, 1}, false, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrVersion) {
				t.Fatalf("%s: error %v wraps none of ErrFormat, ErrChecksum, ErrVersion", what, err)
			}
		}
		_, err := Decode(b)
		check("as given", err)
		c := append([]byte(nil), b...)
		if seal(c) == nil {
			_, err = Decode(c)
			check("re-sealed", err)
		}
	})
}
