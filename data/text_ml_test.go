package data

import (
	"os"
	"testing"
)

const textMLPath = "../../shared/data/ml-latest-small/ratings.csv"

// TestLoadMovieLensLatestSmall loads the real ml-latest-small log and checks
// its published shape: 610 users, 100,836 ratings, and 9,724 distinct
// movies in ratings.csv (the 9,742 of movies.csv include 18 never rated).
func TestLoadMovieLensLatestSmall(t *testing.T) {
	if _, err := os.Stat(textMLPath); err != nil {
		t.Skipf("ml-latest-small not present at %s: %v", textMLPath, err)
	}
	s, rep, err := Load(textMLPath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.NNZ(); got != 100836 {
		t.Errorf("NNZ = %d, want 100836", got)
	}
	if s.Dims[0] != 610 || s.Dims[1] != 9724 {
		t.Errorf("users x items = %d x %d, want 610 x 9724", s.Dims[0], s.Dims[1])
	}
	if rep.Rows != 100836 || rep.Format != FormatCSV || rep.Delimiter != "," || !rep.Header {
		t.Errorf("report %+v", rep)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Logf("dims %v, detected %v", s.Dims, rep.Detected)
}
