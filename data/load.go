package data

import "strings"

// Format names an input or output file format.
type Format string

// Formats. FormatAuto picks by file name (extension, after any .gz) and,
// for delimited text, by content.
const (
	FormatAuto        Format = ""
	FormatCSV         Format = "csv"     // comma-separated (MovieLens ratings.csv and generic CSV)
	FormatTSV         Format = "tsv"     // tab-separated (MovieLens 100K u.data and generic TSV)
	FormatDat         Format = "dat"     // "::"-separated (MovieLens 1M/10M ratings.dat)
	FormatArrow       Format = "arrow"   // Arrow IPC file format (.arrow, .feather)
	FormatArrowStream Format = "arrows"  // Arrow IPC stream format (.arrows)
	FormatParquet     Format = "parquet" // Parquet (.parquet)
)

// Columns names the columns that hold each role. Empty names mean the
// defaults: for files with a header or a schema, the first match among
// common names (user: userId, user_id, user; item: movieId, itemId, item_id,
// item, movie; rating: rating, value, score; time: timestamp, time, ts);
// for headerless text, the positional order user, item, rating, time.
//
// Implicit-feedback logs (clicks, plays) may have no rating column: Rating
// "-" for files with a header, or an Order without "rating", reads every
// row with the value 1 (delimited text only). Repeated events then merge
// by the duplicate policy; DupSum counts them.
type Columns struct {
	User, Item, Rating, Time string
	// Order, for headerless delimited text, gives the role of each column in
	// file order ("user", "item", "rating", "time", or "-" to ignore); nil
	// means user,item,rating[,time].
	Order []string
}

// NoRating reports whether c says the log has no rating column.
func (c Columns) NoRating() bool {
	if c.Rating == "-" {
		return true
	}
	if len(c.Order) == 0 {
		return false
	}
	for _, r := range c.Order {
		if strings.EqualFold(strings.TrimSpace(r), "rating") {
			return false
		}
	}
	return true
}

// LoadOptions configure loading a rating log. The zero value auto-detects
// the format, delimiter and header, buckets time by day, keeps the last
// duplicate and fails on the first malformed row.
type LoadOptions struct {
	Format  Format
	Columns Columns
	// Delimiter overrides delimiter detection for delimited text ("," "\t"
	// "::" ";" "|" or " ").
	Delimiter string
	// Header is "auto" (or empty), "yes" or "no" for delimited text.
	Header string
	// Builder configures time bucketing, duplicates and raw time stamps.
	Builder BuilderOptions
	// SkipInvalid skips malformed rows (counted in the report) instead of
	// failing the load.
	SkipInvalid bool
	// Threads bounds parsing parallelism; zero means GOMAXPROCS.
	Threads int
	// MaxLine is the longest line of delimited text accepted, in bytes
	// (without the line end); zero means DefaultMaxLine. A longer line is
	// a malformed row (ErrLineTooLong), skipped under SkipInvalid; it is
	// never buffered whole, so memory stays bounded by about MaxLine plus
	// the read block per parsing thread.
	MaxLine int
	// MaxMemory bounds the estimated peak memory of the load in bytes
	// (per row and per distinct ID; see the constants in memory.go): when
	// the rows held would exceed it, duplicates are merged so far, and the
	// load fails with ErrMemoryLimit, giving the estimate, when the merged
	// rows still need more than 3/4 of it. Zero means
	// DefaultMemoryFraction of the physical memory; negative means no
	// limit.
	MaxMemory int64
	// Progress, if set, is called with the work done and the total (bytes
	// for text, rows for Arrow and Parquet; total -1 when unknown). It may
	// be called from several goroutines but never concurrently.
	Progress func(done, total int64)
}

// DefaultMaxLine is the default LoadOptions.MaxLine: 1 MiB, far above any
// rating row.
const DefaultMaxLine = 1 << 20

func (o *LoadOptions) maxLine() int {
	if o.MaxLine > 0 {
		return o.MaxLine
	}
	return DefaultMaxLine
}

// LoadReport says what a load detected and did.
type LoadReport struct {
	Path      string `json:"path"`
	Format    Format `json:"format"`
	Delimiter string `json:"delimiter,omitempty"`
	Header    bool   `json:"header"`
	// Detected lists human-readable notes on what was auto-detected.
	Detected []string `json:"detected,omitempty"`
	// Rows is the number of data rows read (before skipping and merging).
	Rows int `json:"rows"`
	// Skipped counts malformed rows skipped under SkipInvalid; SkipReasons
	// holds the first few reasons.
	Skipped     int      `json:"skipped"`
	SkipReasons []string `json:"skip_reasons,omitempty"`
	// Duplicates reports merged duplicate cells.
	Duplicates DuplicateStats `json:"duplicates"`
	// Columns are the column names (or positions) used for each role.
	UserColumn, ItemColumn, RatingColumn, TimeColumn string
}

// WriteOptions configure writing a store.
type WriteOptions struct {
	// Format; FormatAuto picks by the output file name.
	Format Format
	// Force allows replacing an existing file.
	Force bool
	// Columns names the output columns; empty names mean userId, movieId
	// (or itemId), rating, timestamp.
	Columns Columns
}
