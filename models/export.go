package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Export file names, one table per factor mode plus the core and the
// header. See Export.
const (
	ExportHeader = "header.json"
	ExportCore   = "core.parquet"
)

// ExportTable is the name of the Parquet table of a mode's factor rows:
// "users.parquet", "items.parquet", "times.parquet".
func ExportTable(mode int) string { return modeNames[mode] + "s.parquet" }

// ExportedHeader is the content of header.json: the model header (the same
// JSON as in the model file) and a description of the tables.
type ExportedHeader struct {
	Header
	// Tables maps each file written to what it holds.
	Tables map[string]string `json:"tables"`
	// Prediction states how the tables combine into a prediction.
	Prediction string `json:"prediction"`
}

// Export writes the model of f as Parquet tables in dir, so that DuckDB,
// pandas or Spark read it without dprec:
//
//	users.parquet, items.parquet, times.parquet (order 3 only), one row per
//	    index of the mode, in index order:
//	    index  int64    dense index (the row of the factor matrix)
//	    id     int64 or string: the external id (the dictionary); for
//	           times the bucket start in Unix seconds
//	    start  timestamp[ms, UTC] (times only): the bucket start
//	    bias   float64  the row's bias (only when the model has biases)
//	    f0 .. f{R-1}  float64  the factor row
//	core.parquet: p, q[, t] int32 and value float64, one row per core entry
//	    (row-major, last mode fastest); for CP the superdiagonal of ones
//	    (p = q = t), so the same query serves both kinds
//	user_time_bias.parquet, item_period_bias.parquet (models with
//	    user x time-bucket and item x period biases, decomposition.PairBias):
//	    user or item int64 (the mode's dense index), period int64 (time
//	    bucket index / the divisor header.json gives) and bias float64,
//	    one row per pair present, in key order; absent pairs are 0
//	header.json: ExportedHeader (global mean, clamp range, time bucketing,
//	    settings, privacy report, ...)
//
// A prediction is mean + user.bias + item.bias + time.bias + sum over core
// rows of value * user.f{p} * item.f{q} * time.f{t}, plus the pair biases
// present for (user, period) and (item, period), clamped to
// [clamp_lo, clamp_hi] when clamp_lo < clamp_hi, and set to clamp_lo when
// clamp_lo == clamp_hi except for the zero value [0, 0] (no clamp; the
// one-point range at 0 is written [-0, 0]). ExportFiles lists the files
// written for a model.
//
// If dir does not exist it is created by writing a temporary sibling
// directory and renaming it, so a failed export leaves nothing behind. An
// existing dir is written into file by file (each atomically); existing
// files are replaced only with force.
func Export(dir string, f *File, force bool) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	target := dir
	fresh := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".tmp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp) // no-op after the rename
		target, fresh = tmp, true
	} else if err != nil {
		return err
	}
	if err := exportFiles(target, f, force); err != nil {
		return err
	}
	if fresh {
		if err := os.Chmod(target, 0o755); err != nil {
			return err
		}
		if err := os.Rename(target, dir); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

func exportFiles(dir string, f *File, force bool) error {
	m := f.Model
	h := ExportedHeader{Header: f.header(), Tables: map[string]string{}}
	for mo := 0; mo < m.Order(); mo++ {
		name := ExportTable(mo)
		h.Tables[name] = fmt.Sprintf("%s factor rows: index, id, %sf0..f%d", modeNames[mo], map[bool]string{true: "bias, ", false: ""}[m.HasBias], m.Ranks[mo]-1)
		if err := exportParquet(filepath.Join(dir, name), force, func(w io.Writer) error { return exportMode(w, f, mo) }); err != nil {
			return err
		}
	}
	h.Tables[ExportCore] = "core entries: p, q" + map[bool]string{true: ", t", false: ""}[m.Order() == 3] + ", value (CP: the superdiagonal of ones)"
	if err := exportParquet(filepath.Join(dir, ExportCore), force, func(w io.Writer) error { return exportCore(w, m) }); err != nil {
		return err
	}
	for i := range m.Pairs {
		name := ExportPairTable(m, i)
		pb := &m.Pairs[i]
		h.Tables[name] = fmt.Sprintf("%s x time-period biases: %s, period (time bucket index / %d), bias; absent pairs are 0", modeNames[pb.A], modeNames[pb.A], pb.Div)
		if err := exportParquet(filepath.Join(dir, name), force, func(w io.Writer) error { return exportPairs(w, pb, modeNames[pb.A]) }); err != nil {
			return err
		}
	}
	if f.Weights != nil {
		h.Tables[ExportItemWeights] = "item-item weights W: item, target (dense item indices, see items.parquet), weight; absent pairs are 0"
		if err := exportParquet(filepath.Join(dir, ExportItemWeights), force, func(w io.Writer) error { return exportWeights(w, f.Weights) }); err != nil {
			return err
		}
		if f.RankingWeights() {
			h.Tables[ExportItemWeights] = "ranking weights W of a private rating model: item, target (dense item indices, see items.parquet), weight; absent pairs are 0"
		}
	}
	if f.ItemItem() {
		h.Tables[ExportSeenItems] = "every user's training items: user, item (dense indices)"
		if err := exportParquet(filepath.Join(dir, ExportSeenItems), force, func(w io.Writer) error { return exportSeen(w, f.Seen) }); err != nil {
			return err
		}
		h.Prediction = "item-item model (objective ease): the score of item j for user u is the sum of item_weights.weight over the rows with target = j and item in u's seen_items (the factor tables are zero and carry the ids only); seen items are left out of recommendations"
		return writeExportHeader(dir, force, h)
	}
	h.Prediction = "global_mean + user.bias + item.bias + time.bias + sum over core rows of value * user.f{p} * item.f{q} * time.f{t}, clamped to [clamp_lo, clamp_hi] when clamp_lo < clamp_hi, or equal to clamp_lo when clamp_lo == clamp_hi other than [0, 0] (no clamp; one value 0 throughout is written [-0, 0]) (biases only when bias is true; no time terms for an order-2 model)"
	if len(m.Pairs) > 0 {
		h.Prediction += "; plus, for each pair table, the bias of the row (user or item index, time bucket index / period) when present"
	}
	if f.RankingWeights() {
		h.Prediction += "; lists rank item j for a user with history H (the items they rated) by the sum of item_weights.weight over the rows with target = j and item in H, not by the prediction"
	}
	return writeExportHeader(dir, force, h)
}

// writeExportHeader writes header.json.
func writeExportHeader(dir string, force bool, h ExportedHeader) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, ExportHeader)
	return data.WriteFileAtomic(path, force, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

func exportParquet(path string, force bool, write func(w io.Writer) error) error {
	return data.WriteFileAtomic(path, force, func(w io.Writer) error {
		if err := write(w); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// exportWriter writes records of schema sc as snappy Parquet on w.
func exportWriter(w io.Writer, sc *arrow.Schema) (*data.ParquetWriter, error) {
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(batchRows))
	// data.NewParquetWriter never closes w (the caller owns it) and
	// returns w's error (a full disk) where pqarrow would panic.
	return data.NewParquetWriter(sc, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
}

func exportMode(w io.Writer, f *File, mo int) error {
	m := f.Model
	d := f.Dicts[mo]
	fields := []arrow.Field{{Name: "index", Type: arrow.PrimitiveTypes.Int64}}
	switch {
	case d == nil:
		fields = append(fields,
			arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "start", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}})
	case d.IsString:
		fields = append(fields, arrow.Field{Name: "id", Type: arrow.BinaryTypes.String})
	default:
		fields = append(fields, arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64})
	}
	if m.HasBias {
		fields = append(fields, arrow.Field{Name: "bias", Type: arrow.PrimitiveTypes.Float64})
	}
	R := m.Ranks[mo]
	for r := 0; r < R; r++ {
		fields = append(fields, arrow.Field{Name: "f" + strconv.Itoa(r), Type: arrow.PrimitiveTypes.Float64})
	}
	return exportRows(w, arrow.NewSchema(fields, nil), m.Dims[mo], func(b *array.RecordBuilder, i int) {
		c := 0
		b.Field(c).(*array.Int64Builder).Append(int64(i))
		c++
		switch {
		case d == nil:
			start := f.Time.Start(int32(i))
			b.Field(c).(*array.Int64Builder).Append(start)
			b.Field(c + 1).(*array.TimestampBuilder).Append(arrow.Timestamp(start * 1000))
			c += 2
		case d.IsString:
			b.Field(c).(*array.StringBuilder).Append(d.String(int32(i)))
			c++
		default:
			b.Field(c).(*array.Int64Builder).Append(d.Int(int32(i)))
			c++
		}
		if m.HasBias {
			b.Field(c).(*array.Float64Builder).Append(m.Bias[mo][i])
			c++
		}
		for r, v := range m.Row(mo, i) {
			b.Field(c + r).(*array.Float64Builder).Append(v)
		}
	})
}

// exportRows writes n rows of schema sc as snappy Parquet on w, row i
// appended by row, in record batches of at most batchRows rows.
func exportRows(w io.Writer, sc *arrow.Schema, n int, row func(b *array.RecordBuilder, i int)) error {
	fw, err := exportWriter(w, sc)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	flush := func() error {
		rec := b.NewRecord()
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		return fw.Write(rec)
	}
	for i := 0; i < n; i++ {
		row(b, i)
		if (i+1)%batchRows == 0 {
			if err := flush(); err != nil {
				fw.Close()
				return err
			}
		}
	}
	if err := flush(); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

func exportCore(w io.Writer, m *decomposition.Model) error {
	n := m.Order()
	fields := []arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int32}, {Name: "q", Type: arrow.PrimitiveTypes.Int32}}
	if n == 3 {
		fields = append(fields, arrow.Field{Name: "t", Type: arrow.PrimitiveTypes.Int32})
	}
	fields = append(fields, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64})
	sc := arrow.NewSchema(fields, nil)
	fw, err := exportWriter(w, sc)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	add := func(idx []int, v float64) {
		for k, x := range idx {
			b.Field(k).(*array.Int32Builder).Append(int32(x))
		}
		b.Field(n).(*array.Float64Builder).Append(v)
	}
	if m.Kind == decomposition.CP {
		for r := 0; r < m.Ranks[0]; r++ {
			idx := make([]int, n)
			for k := range idx {
				idx[k] = r
			}
			add(idx, 1)
		}
	} else {
		// Row-major, last mode fastest.
		idx := make([]int, n)
		for _, v := range m.Core {
			add(idx, v)
			for k := n - 1; k >= 0; k-- {
				if idx[k]++; idx[k] < m.Ranks[k] {
					break
				}
				idx[k] = 0
			}
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// Export file names of the pair biases (ExportPairTable).
const (
	ExportUserTimeBias   = "user_time_bias.parquet"
	ExportItemPeriodBias = "item_period_bias.parquet"
)

// ExportPairTable is the Parquet file name of pair bias i:
// ExportUserTimeBias or ExportItemPeriodBias.
func ExportPairTable(m *decomposition.Model, i int) string {
	if m.Pairs[i].A == 0 {
		return ExportUserTimeBias
	}
	return ExportItemPeriodBias
}

// Export file names of an item-item model's weights and seen items.
const (
	ExportItemWeights = "item_weights.parquet"
	ExportSeenItems   = "seen_items.parquet"
)

// exportWeights writes W's entries in row order: item, target, weight.
func exportWeights(w io.Writer, iw *ItemWeights) error {
	sc := arrow.NewSchema([]arrow.Field{{Name: "item", Type: arrow.PrimitiveTypes.Int64}, {Name: "target", Type: arrow.PrimitiveTypes.Int64}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64}}, nil)
	row := int32(0)
	return exportRows(w, sc, iw.NNZ(), func(b *array.RecordBuilder, k int) {
		for int64(k) >= iw.pat.ptr[row+1] {
			row++
		}
		b.Field(0).(*array.Int64Builder).Append(int64(row))
		b.Field(1).(*array.Int64Builder).Append(int64(iw.pat.items[k]))
		b.Field(2).(*array.Float64Builder).Append(iw.vals[k])
	})
}

// exportSeen writes the seen items: user, item.
func exportSeen(w io.Writer, e *Exclusions) error {
	sc := arrow.NewSchema([]arrow.Field{{Name: "user", Type: arrow.PrimitiveTypes.Int64}, {Name: "item", Type: arrow.PrimitiveTypes.Int64}}, nil)
	u := int32(0)
	return exportRows(w, sc, e.Pairs(), func(b *array.RecordBuilder, k int) {
		for int64(k) >= e.ptr[u+1] {
			u++
		}
		b.Field(0).(*array.Int64Builder).Append(int64(u))
		b.Field(1).(*array.Int64Builder).Append(int64(e.items[k]))
	})
}

// ExportFiles returns the names of the files Export writes for m, sorted:
// the header, the core, one table per mode and one per pair bias. An
// item-item model (ExportFilesOf) adds its weights and seen items.
func ExportFiles(m *decomposition.Model) []string {
	names := []string{ExportHeader, ExportCore}
	for mo := 0; mo < m.Order(); mo++ {
		names = append(names, ExportTable(mo))
	}
	for i := range m.Pairs {
		names = append(names, ExportPairTable(m, i))
	}
	slices.Sort(names)
	return names
}

// ExportFilesOf returns the names of the files Export writes for f, sorted.
func ExportFilesOf(f *File) []string {
	names := ExportFiles(f.Model)
	if f.Weights != nil {
		names = append(names, ExportItemWeights, ExportSeenItems)
		slices.Sort(names)
	}
	return names
}

// ExportFileNames returns every file name Export may write into its
// directory, whatever the model.
func ExportFileNames() []string {
	names := []string{ExportHeader, ExportCore, ExportUserTimeBias, ExportItemPeriodBias, ExportItemWeights, ExportSeenItems}
	for mo := range modeNames {
		names = append(names, ExportTable(mo))
	}
	return names
}

// exportPairs writes one pair bias: the mode-A index, the period and the
// bias, in key order.
func exportPairs(w io.Writer, pb *decomposition.PairBias, name string) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: name, Type: arrow.PrimitiveTypes.Int64},
		{Name: "period", Type: arrow.PrimitiveTypes.Int64},
		{Name: "bias", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	return exportRows(w, sc, len(pb.Keys), func(b *array.RecordBuilder, e int) {
		k := pb.Keys[e]
		b.Field(0).(*array.Int64Builder).Append(int64(k >> 32))
		b.Field(1).(*array.Int64Builder).Append(int64(uint32(k)))
		b.Field(2).(*array.Float64Builder).Append(pb.Vals[e])
	})
}
