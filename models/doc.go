// Package models stores trained completion models in one self-describing,
// versioned file and serves predictions, top-N recommendations and
// evaluations from them.
//
// # File format (versions 1 and 2)
//
// A model file is an Arrow IPC file (the "Feather v2" random-access format,
// magic "ARROW1"), so pyarrow, DuckDB, Polars or any Arrow reader opens it
// without dprec:
//
//	pyarrow.ipc.open_file("model.arrow").read_all().to_pandas()
//	SELECT * FROM 'model.arrow' WHERE part = 'item'        -- DuckDB (arrow extension)
//
// Every record batch has the same schema, one row per factor row or core
// entry ("long" layout), in this column order:
//
//	part    utf8     "user", "item", "time", "core" or "pair"
//	mode    int32    0, 1, 2 for factor rows; -1 for core entries; -2 - p
//	                 for the rows of pair bias p
//	index   int64    dense row index in its mode; for the core, the
//	                 row-major (last mode fastest) flat index
//	id      utf8     external id (integers in base 10); for time rows the
//	                 bucket start as RFC 3339 UTC; null for the core
//	id_int  int64    integer external id, or the bucket start in Unix
//	                 seconds for time rows; null for string ids and the core
//	bias    float64  the row's bias (null when the model has no biases)
//	f0 .. f{Rmax-1}  float64 factor row (a_i, b_j or c_k), Rmax the largest
//	                 rank; entries beyond the mode's rank are null
//	core_p, core_q, core_t  int32  Tucker core multi-index (null otherwise;
//	                 core_t null for order-2 models)
//	value   float64  Tucker core entry G[p,q,t] (null for factor rows)
//	seen    binary   version 2 only: a piece of the seen-items stream (null
//	                 on every other row)
//
// Factor rows come mode by mode in index order, in batches of at most 65,536
// rows, then the core, then the pair biases (decomposition.PairBias: a
// user x time-bucket and an item x period bias, sparse): one row per pair
// seen in training, in key order, with index the user or item index,
// core_p the period (time bucket / period length) and value the bias; the
// header's "pairs" lists each pair bias's modes, period length and row
// count. Files without pair biases are byte-identical to files written
// before pair biases existed. In a version 2 file the seen rows come last
// (part "seen", mode -2147483648, index the piece number 0, 1, 2, ...,
// every column but seen null). Save writes version 2 for a file with seen
// items and version 1, without the seen column, otherwise (byte-identical
// to files written before version 2 existed); Load reads both. The schema
// metadata holds:
//
//	dprec.format   "dprec-model"  (magic: anything else is not a model)
//	dprec.version  "1" or "2"     (other versions are rejected)
//	dprec.header   JSON Header: kind, modes, dims, ranks, id types and
//	               column names, biases, global mean, clamp range, time
//	               bucketing, training settings and per-epoch history, data
//	               fingerprint (SHA-256 of the training indices and values),
//	               created time, program version, and the privacy report
//	               ("privacy": {"mode": "none", ...} for non-private models)
//	dprec.sha256   payload checksum: SHA-256 of the header JSON followed by
//	               every id, bias, factor value and core value in canonical
//	               order (mode by mode, row by row; little-endian IEEE-754
//	               bits), recomputed and compared on load
//	dprec.seal     "dprec-file-sha256:" + SHA-256 of the whole file with the
//	               64 digest bytes of each seal copy zeroed
//	dprec.seen     version 1 only, optional: every user's training items
//	               (see below), base64'd; the header's "seen" entry
//	               announces it ({users, pairs, encoding}) and the payload
//	               checksum covers it
//
// # Seen items
//
// A non-private model stores the items each user has in the training log,
// so recommend and eval leave them out without the training log. The part
// is a compressed sparse row structure, varint-encoded: uvarint users,
// uvarint pairs, one uvarint count per user, then per user its sorted
// distinct items as gaps (the first item index, then each item minus the
// previous minus 1), all uvarint. About 1.5 bytes per (user, item) pair on
// ml-latest-small, 1.9 on a log of 10M ratings of 200,000 users and 50,000
// items. Version 2 (SeenEncoding, "uvarint csr-gaps v1 in seen rows")
// stores the stream raw, cut into pieces of 1 MiB, one per seen row, so
// it is in the file once; version 1 ("base64 uvarint csr-gaps v1") stored
// it base64'd in the schema metadata, which Arrow writes twice (2.7 times
// the bytes: the seen items made 58% of an 87 MB model). In Python:
//
//	t = pyarrow.ipc.open_file("model.arrow").read_all()
//	s = t.filter(pyarrow.compute.equal(t["part"], "seen")).sort_by("index")
//	raw = b"".join(s["seen"].to_pylist()); pos = 0
//	# version 1: raw = base64.b64decode(schema.metadata[b"dprec.seen"])
//	def uv():  # LEB128
//	    global pos; v = s = 0
//	    while True:
//	        b = raw[pos]; pos += 1; v |= (b & 127) << s; s += 7
//	        if b < 128: return v
//	users, pairs = uv(), uv(); counts = [uv() for _ in range(users)]
//	# user u's items: prev = -1; repeat counts[u] times: prev += 1 + uv()
//
// Load checks every count against the bytes that remain before allocating,
// every item against the model's item count, and the header's counts. A
// private model never stores the part (Save refuses, Load rejects it): the
// items a user rated are the private data. Such models need
// recommend --exclude-rated.
//
// # Item-item models (version 3)
//
// An item-item model (Header.Objective "ease", ObjectiveItemItem; trained
// by package itemitem: EASE, Steck 2019) scores item j for user u as
//
//	s(u, j) = sum over the items i of u's seen items of W[i, j]
//
// for a sparse items x items weight matrix W (File.Weights). Its Model is
// a shell that carries the mode sizes: order 2, CP rank 1, zero factors, no
// biases (the user and item rows still hold the ids); the seen-items part
// is required (it is the history the scores sum over). W is stored like
// the seen items: a stream cut into pieces of 1 MiB in the binary column
// ("seen") of rows with part "weights", mode -2147483647, index the piece
// number, after the seen rows. The stream is a uvarint byte length, then
// W's pattern in the seen-items encoding (its rows as users), then the
// values as float64 little endian in row order (WeightsEncoding); the
// header's "weights" entry gives {items, nnz, encoding} and the payload
// checksum covers the stream after the seen items. Files with weights are
// version 3; older readers reject them by version.
//
// # Lists of a private rating model (ranking weights, version 3)
//
// A private billboard rating model (the bias and als modes: no user rows)
// may carry the same weights part without seen items: File.RankingWeights.
// Its factors predict (Predict, PredictRow, the RMSE of Evaluate); a user
// given by a Row with Items (their own history: RecommendRow, a fold-in
// Evaluate) is ranked by the sum of W's rows of those items, and the
// returned Rating is the factor model's prediction of the item. The file
// is version 3 (it has weights); Billboard must hold and Seen must be nil.
// package dprec fits W on the positions when the privacy relation makes
// them public (dprec.ListsPositions).
//
// Recommend, RecommendAll, Evaluate and Predict score a known user by
// summing the rows of W of their seen items into one dense score vector
// (O(items) memory per user); an unknown user gets the items by training
// popularity, as for implicit models. Rankings are never shrunk.
// SimilarItems ranks by the cosine of the items' rows of W (the scores an
// item adds to every other item when it is in a history), SimilarUsers by
// the cosine of the users' binary histories.
//
// # Loading guarantees
//
// Load reads the file once (its size bounds the memory) and checks, in
// order: the seal, before any Arrow decoding (a truncated file or any
// flipped byte is rejected with ErrFormat or ErrChecksum without touching
// the decoder); the flatbuffer footer (every offset inside the footer
// without the uint32 wrap-around the flatbuffers runtime would apply, every
// vector count fitting the bytes that remain, only the column types model
// files use, no field children), so no count in a crafted file can size an
// allocation and the Arrow decoder, which recurses into field children
// without a depth limit (a stack overflow is fatal, not a recoverable
// panic), never recurses;
// the format name and version (ErrVersion); the header's shapes against the
// file size, before the model is allocated; then it decodes the record
// batches with an allocator capped at four times the file size plus 1 MiB,
// checks every row (range, duplicates, missing rows, nulls, time bucket
// starts) and finally the payload checksum. Panics inside the Arrow decoder
// are recovered into ErrFormat. Nothing in a model file is executed. Tests
// truncate a model at every byte offset, flip every byte, and flip bytes of
// a re-sealed file (as a deliberate edit would), including every footer
// byte, craft footers whose children offsets wrap around onto the schema's
// own fields (TestFooterCyclicChildren) or onto a huge count, and FuzzDecode
// fuzzes Decode with and without re-sealing; the seal is an integrity
// check, not an authentication.
//
// Save writes through data.WriteFileAtomic (temporary file, fsync, rename)
// and refuses to replace a file unless forced, and refuses models with
// non-finite values.
//
// # Predictions and fallbacks
//
// Predictor maps external ids through the dictionaries and Unix times
// through the time bucketing (Wei et al. 2021, eq. 2-3 with biases):
//
//	x̂(u,i,t) = mu + b_u + b_i + b_t + G ×1 a_u ×2 b_i ×3 c_t
//
// clamped to the model's rating range. An unknown user or item contributes
// neither its factor row nor its bias (a model without biases falls back to
// the training mean); a time outside the trained range uses the nearest
// bucket; no time averages the time rows and biases over the trained
// buckets. The Fallback bit set says which of these happened; the value is
// never a silent 0 and never indexes out of range.
//
// Recommend and RecommendAll contract the model with the user (and time)
// into one vector w of the item rank, so an item's score is
// base + b_i + <w, b_i>, and stream the items through a size-N min-heap:
// O(N) memory per user. RecommendAll scores blocks of 64 users per pass
// over the item matrix (four users per load of an item row), blocks in
// parallel, and emits users in index order; it never holds the users x
// items matrix.
//
// Items a user has seen in training (the seen-items part, and any
// Exclusions such as recommend --exclude-rated) are skipped, and
// Exclusions.Allowed restricts every list to a candidate set. A user who has
// seen every candidate gets an empty list.
//
// Rankings from rating models are by relevance by default in the CLI
// (Predictor.WithRanking, RankRelevance): log(n_j + 1 + sd) + log
// Phi((prediction - t)/s), the log-probability that the user rates the
// item and likes it, n_j the item's number of training users (or the
// item counts a private model's report carries, sd their noise) and t, s
// the top quarter of the rating range. RankCredibility multiplies the
// item-dependent part of the prediction by n_j / (n_j + kappa) instead
// (DefaultShrinkage), so items with a handful of ratings no longer fill
// every list, and RankPrediction ranks by the prediction. Implicit-objective models (Header.Objective) score
// preferences x_u . y_j directly; an unknown user of such a model gets the
// items by training popularity.
//
// SimilarItems and SimilarUsers rank by the cosine of factor embeddings
// (for an order-3 CP model the rows times the time-averaged time row).
//
// # Evaluation
//
// Evaluate maps the test log to the model by external id. RMSE and MAE are
// over all test ratings (fallbacks included, counted per fallback kind).
// Ranking metrics score the lists recommend gives: a test item is relevant
// to its user when its test rating >= Threshold. For every test user known
// to the model with at least one relevant test item, all items of the
// model are ranked with the same score recommend uses (the predictor's
// ranking, WithRanking, at EvalOptions.Time: nil averages over the
// trained period as recommend does without --time), minus the model's seen items (unless
// IncludeSeen) and the items the user has in EvalOptions.Train; with top-k
// list L (shorter when fewer items remain) and relevant set Rel (distinct
// items, including items the model does not know, which can never be hit):
//
//	precision@k = |L ∩ Rel| / k
//	recall@k    = |L ∩ Rel| / |Rel|
//	NDCG@k      = sum_{r=1..k, L_r in Rel} 1/log2(r+1)  /  sum_{r=1..min(k,|Rel|)} 1/log2(r+1)
//	AP@k        = sum_{r=1..k, L_r in Rel} (|L_1..L_r ∩ Rel| / r)  /  min(k, |Rel|)
//
// each averaged over those users (MAP@k is the mean of AP@k), and
//
//	coverage    = |union of those users' lists L| / number of items of the model
//
// The most-popular baseline (EvalResult.Popularity) gives every one of
// those users the k items with the most distinct training users (from the
// seen items, else EvalOptions.Train), or with the largest
// EvalOptions.PopularityCounts when given (such as a private model's
// released item counts), ties by item index, minus the same left-out
// items, and is scored identically, so every model metric has its
// baseline beside it.
//
// # Concurrency
//
// A loaded File and its Predictor are read-only: any number of goroutines
// may call Predict, Recommend, RecommendAll and Evaluate concurrently
// (tested under the race detector). Save and Load share no state.
package models
