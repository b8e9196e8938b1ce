// Package data holds the observed entries of a rating tensor and the files
// they come from: a sparse coordinate Store, loading and writing rating logs
// (delimited text, Arrow IPC, Parquet), statistics, train/test splits, a
// synthetic generator with known ground truth, and bag-of-words corpora for
// the spectral models.
//
// # Store
//
// A Store keeps the observed cells of a user x item (x time) tensor as a
// struct of arrays: one []int32 of dense indices per mode and one []float64
// of values. Order 3 (user x item x time bucket, the tensor of the
// tensor-completion paper) costs 3*4+8 = 20 bytes per observation; the
// loaders trim their reservations so the measured figure (slice
// capacities, TestStoreBytesPerObservation) stays at most 24 bytes.
// Dictionaries (Dict) map external IDs to dense indices in order of first
// appearance and cost extra (about 8 bytes plus a map entry per distinct
// ID); raw time stamps, kept on request, cost 8 bytes per observation.
// Store.Each visits the entries in any caller-given order without copying.
//
// # Delimited text grammar
//
// A file is a sequence of lines ending in LF or CRLF; blank lines are
// ignored, and a UTF-8 byte-order mark at the start is dropped. Gzip input
// is recognised by its magic bytes whatever the file name.
//
//	file   = [header] row {row}
//	row    = field {delim field}
//	field  = plain | '"' {char | '""'} '"'
//	delim  = "," | TAB | "::" | ";" | "|" | blanks
//
// Supported layouts: MovieLens 100K u.data (tab, no header: user item
// rating time), MovieLens 1M/10M ratings.dat ("::", no header), MovieLens
// 20M/25M/latest ratings.csv (header userId,movieId,rating,timestamp), and
// any CSV/TSV with a header or with the columns given by position.
//
//   - Delimiter: LoadOptions.Delimiter, else the first of "::", tab, comma,
//     semicolon, pipe, space (the one the file name suggests tried first)
//     that splits the first 50 non-blank lines into the same number (at
//     least 3) of fields. With the space delimiter, runs of blanks separate
//     fields. Unquoted fields have surrounding spaces trimmed.
//   - Quoting (RFC 4180 style): a field that starts with '"' runs to the next
//     lone '"'; '""' stands for a quote, and the delimiter may appear inside.
//     A quoted field cannot span lines.
//   - Header: LoadOptions.Header, else detected: the first non-blank line is
//     a header exactly when none of its fields is a number (a data row always
//     holds a numeric rating).
//   - Columns: with a header, Columns names them (exact, then
//     case-insensitive match) or the defaults userId/user_id/user,
//     movieId/itemId/item_id/item/movie, rating/value/score and
//     timestamp/time/ts are tried; the time column is optional. Columns.Order
//     gives roles by position instead (any header line is then skipped).
//     Without a header the columns are user, item, rating and, if present,
//     time. Fields beyond the needed ones are ignored.
//   - IDs: an ID column holds integers when every value is an integer
//     literal (optional sign, decimal digits); "007" and "7" are then the same
//     ID. A negative or int64-overflowing integer is an error (ErrBadID). A
//     column with any other value (a letter, a dot, ...) holds strings, for
//     all its rows: the decision is made on the whole file (the loader
//     restarts when a late row turns a column to strings), never on a sample.
//   - Ratings: decimal floating point (strconv syntax); empty, NaN, Inf,
//     out-of-range or non-numeric values are errors (ErrBadRating).
//   - Time: integer Unix seconds, decimal Unix seconds (floored to the
//     second), or an ISO-8601 / RFC 3339 date: 2006-01-02,
//     2006-01-02T15:04:05, 2006-01-02 15:04:05 (all UTC) or
//     2006-01-02T15:04:05Z07:00 with an optional fraction (ErrBadTime
//     otherwise).
//
// A line longer than LoadOptions.MaxLine (default 1 MiB) is a malformed
// row (ErrLineTooLong); the reader drops such a line as it streams past,
// so memory never holds more than MaxLine plus one read block of it. Two
// columns with the name that selects a role (exactly, or ignoring case
// when no column matches exactly) are an error (ErrDuplicateColumn).
//
// Every malformed row fails the load with a *ParseError naming the file,
// line, column and reason (wrapping ErrFieldCount, ErrBadID, ErrBadRating,
// ErrBadTime or ErrQuote); with LoadOptions.SkipInvalid such rows are
// skipped and counted in LoadReport.Skipped, with the first reasons in
// SkipReasons. An empty file, a header-only file (ErrNoData), a missing
// column (ErrNoColumn, listing the available names) and a file with fewer
// than three columns (ErrFieldCount) each have their own message.
//
// Writing (Save) produces CSV or TSV with a header (userId, movieId,
// rating, timestamp unless WriteOptions.Columns names them) or ".dat"
// without one; ratings are written in the shortest form that parses back to
// the same float64, time as the raw Unix seconds when the store keeps them
// (else the start of the time bucket). CSV -> Store -> CSV round-trips
// exactly: entries, dictionaries (order and type, except that string IDs
// that are all integer literals load back as integers) and time stamps.
//
// # Time buckets and duplicates
//
// Raw Unix seconds are bucketed by a TimeUnit (hour, day, week, month, or
// none for an order-2 store); the TimeBucketing records the unit and the
// first bucket, so a later time stamp maps to the same bucket (clamped to
// the trained range, and reported). The mode holds every bucket from the
// first to the last time stamp, at most TimeUnit.MaxBuckets (200 years of
// the unit; BuilderOptions.MaxTimeBuckets): a wider span fails with
// ErrTimeSpan before the mode is allocated.
//
// # Memory limit
//
// Every load estimates its peak memory from the rows and distinct IDs held
// so far with the per-row and per-ID costs in memory.go. When the estimate
// exceeds LoadOptions.MaxMemory (default DefaultMemoryFraction of the
// physical memory), the rows so far are merged by the duplicate policy
// (Builder.Compact: the same result and report as merging at the end), so
// a log of many repeated rows needs memory for its distinct cells only;
// if the merged rows still need more than 3/4 of the limit, the load
// fails with ErrMemoryLimit, giving the estimate. Arrow and Parquet
// reserve the announced rows up front only when they fit in half the
// limit. Cells observed several times (same
// user, item and bucket) follow the DuplicatePolicy: keep the last (the
// default, counted in LoadReport.Duplicates), average, or fail.
//
// # Splits and statistics
//
// ComputeStats summarises a store. RandomSplit, PerUserSplit, TimeSplit,
// CutoffSplit and KFold partition its positions; the random ones are
// deterministic given their rand.Source.
//
// # Arrow IPC and Parquet
//
// Arrow IPC files (.arrow, .feather v2, .ipc), IPC streams (.arrows) and
// Parquet (.parquet, .pq) are read with apache/arrow/go/v15. The content
// overrides the name (ARROW1 means file, 0xFFFFFFFF stream, PAR1 Parquet;
// noted in LoadReport.Detected; Feather v1 is refused). Columns come from
// Columns (exact name, then case-insensitive) or the default names. IDs may
// be any signed or unsigned integer column (negative IDs and uint64 above
// MaxInt64 are errors), or utf8, large_utf8 or dictionary-encoded strings
// (empty strings are errors). Ratings may be any integer, float16, float32,
// float64 or decimal128/256 column (NaN and ±Inf are errors). Time may be integer Unix seconds, a timestamp
// of any unit (floored to seconds), date32 or date64; without a time column
// the store has order 2. Nulls are errors. Messages read `FILE: row R (batch
// B | row group G, offset K), column "C": bad rating: rating is NaN`, where
// R counts from 1 and B, G and K from 0. Only the needed columns are read,
// in record batches (128Ki rows per batch for Parquet, row group by row
// group). One goroutine reads and validates; a second interns IDs (a slice
// cache for small non-negative integer IDs before the map) and feeds the
// Builder in file order, so results are deterministic. Corrupt or truncated
// files give errors: IPC framing is checked before the library reads the
// file, allocations are capped at 64 times the file size plus 64 MiB, and
// library panics are recovered. Writing produces int64 IDs (or utf8 for
// string dictionaries), float64 rating and int64 timestamp (the raw
// Timestamps, else each bucket's start; none for order 2), named userId,
// movieId, rating, timestamp unless WriteOptions.Columns says otherwise, in
// 64Ki-row batches. Parquet uses snappy compression, 1Mi-row row groups and
// stores the Arrow schema.
//
// # Synthetic logs
//
// Synth draws distinct cells by Zipf popularity, with values from a CP or
// Tucker model (low-rank variance 0.5; bias sd 0.4 for users, 0.4 for items,
// 0.1 for time) plus N(0, Noise²), rounded to the scale. Clean ratings then
// have sd ≈ 0.91, and observed ratings ≈ 1.04 around mean 3.5. Rows are
// sorted by user, item, time; IDs are 1..n in first-appearance order;
// timestamps are uniform inside their buckets, so Save then Load reproduces
// the store exactly. DefaultSynth, the embedded default every command uses
// when no data file is given, is 1000 users × 1700 items × 200 days, 100,000
// ratings, CP rank 5 with biases, noise 0.5, half stars, skew 0.5, seed
// DefaultSynthSeed.
//
// # Corpora
//
// Corpus is a bag-of-words collection in CSR form (DocPtr; per document
// strictly increasing word ids in Words with positive Counts; Vocab).
// ReadUCIBagOfWords reads UCI docword.txt[.gz] (header lines D, W, NNZ, then
// 1-based "docID wordID count"; repeated pairs summed) with an optional
// vocab.txt; malformed lines, out-of-range document ids, unknown word ids,
// non-positive counts and an NNZ mismatch are errors naming the file and
// line. ReadTextDir reads one document per regular file; files must be UTF-8
// (an error names the file and byte offset); the tokenizer keeps lower-cased
// runs of two or more letters, drops built-in English stop words, prunes the
// vocabulary by MinCount and MaxVocab and sorts it alphabetically. ReadRows
// reads a CSV of numeric rows for mixture models (optional header); a row of
// norm above 1 is an error unless Rescale divides all rows by the largest
// norm (the factor is returned; a data-dependent factor, so private runs
// refuse it). Documents with no remaining word and documents shorter than
// MinDocLen (3 for the spectral models) are skipped and counted in Stats. A
// Corpus is read-only and safe for concurrent reads.
//
// # Concurrency
//
// Delimited text is read in 2 MiB chunks cut at line ends; LoadOptions.Threads
// goroutines (default GOMAXPROCS) parse chunks in parallel into compact
// arrays, and one goroutine feeds them to the Builder in file order, so
// dictionaries and the store are identical for every thread count. Rows in
// the plain form (bare integer IDs and time stamps, digits[.digits]
// ratings, a one-byte delimiter) take a fused fast path; every other row,
// and every malformed one, goes through the general splitter, so errors
// and their line numbers do not depend on the path (tests compare the
// two, and loads at several thread counts and chunk sizes). The duplicate
// merge first checks whether any cell repeats (by hash buckets) and sorts
// the cells only when one does. Stores,
// Dicts and TimeBucketings are read-only once built and then safe for
// concurrent readers; a Builder is not safe for concurrent use.
package data
