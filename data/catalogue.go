package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ReadCatalogue reads a public item catalogue: a CSV whose first column is
// the item id (an optional header row is skipped), as a dictionary of the
// same kind as like (integer ids when the log's are integers; like may be
// nil). Errors name the file and line.
func ReadCatalogue(path string, like *Dict) (*Dict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var d *Dict
	if like != nil && like.IsString {
		d = NewStringDict(like.Name)
	} else {
		d = NewIntDict("item")
		if like != nil {
			d.Name = like.Name
		}
	}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		id := strings.TrimSpace(rec[0])
		if d.IsString {
			if line == 1 && catalogueHeader(id) {
				continue
			}
			d.InternString(id)
			continue
		}
		v, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			if line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s:%d: item id %q is not an integer like the log's", path, line, id)
		}
		d.InternInt(v)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("%s: no item id", path)
	}
	return d, nil
}

// catalogueHeader reports whether a first cell is a header's item column.
func catalogueHeader(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "item", "itemid", "item_id", "movieid", "id":
		return true
	}
	return false
}
