package models

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// FormatName and FormatVersion identify the model file format. A reader
// rejects any other name and any version it does not know. FormatVersion is
// the newest version, which Save writes for item-item models (version 3:
// the weights rows); files with seen items are written as version 2 (the
// seen column and seen rows), byte for byte as before version 3 existed,
// and files without them as version 1, byte for byte as before version 2
// existed. Load reads all three.
const (
	FormatName    = "dprec-model"
	FormatVersion = 3
)

// formatVersionSeenRows is the first version with the seen column.
const formatVersionSeenRows = 2

// formatVersionNoSeenRows is the version of files without the seen column.
const formatVersionNoSeenRows = 1

// Schema metadata keys of a model file.
const (
	metaFormat  = "dprec.format"
	metaVersion = "dprec.version"
	metaHeader  = "dprec.header"
	metaSHA256  = "dprec.sha256"
	metaSeal    = "dprec.seal"
)

// Header is the JSON header stored in the schema metadata of a model file
// (key "dprec.header"). Save fills the fields that describe the model
// itself (format, kind, shape, bias, mean, clamp, id types, time, privacy);
// the caller supplies the rest (settings, history, data, created, software).
type Header struct {
	Format  string             `json:"format"`
	Version int                `json:"version"`
	Kind    decomposition.Kind `json:"kind"`
	// Modes names the modes: "user", "item" and, for order 3, "time".
	Modes []string `json:"modes"`
	Dims  []int    `json:"dims"`
	Ranks []int    `json:"ranks"`
	// IDTypes gives the id type of each mode: "int64", "string" or "time".
	IDTypes []string `json:"id_types"`
	// IDNames are the column names the ids came from ("" for time).
	IDNames []string `json:"id_names"`
	Bias    bool     `json:"bias"`
	// Mean is the model's global mean mu (used when Bias is set).
	Mean float64 `json:"global_mean"`
	// ClampLo < ClampHi clamps predictions to [ClampLo, ClampHi]; a
	// one-point range ClampLo == ClampHi to that value, stored as
	// decomposition.ClampRange does ([-0, 0] at 0; [0, 0] is no clamp).
	ClampLo float64 `json:"clamp_lo"`
	ClampHi float64 `json:"clamp_hi"`
	// Pairs describe the sparse pair biases (user x time bucket, item x
	// period), whose entries are "pair" rows of the table.
	Pairs []PairSpec `json:"pairs,omitempty"`
	// Time is the time bucketing of mode 2 (nil for order 2).
	Time *data.TimeBucketing `json:"time,omitempty"`
	// Settings are the training hyperparameters (completion.Settings as
	// JSON), History the per-epoch training records (JSON array).
	Settings json.RawMessage `json:"settings,omitempty"`
	History  json.RawMessage `json:"history,omitempty"`
	// Data fingerprints the training set.
	Data *DataInfo `json:"data,omitempty"`
	// Created is when the model was trained; Software the program version.
	Created  time.Time `json:"created"`
	Software string    `json:"software,omitempty"`
	// Privacy is the privacy report; Mode "none" for a non-private model.
	Privacy *perturb.Report `json:"privacy"`
	// Objective is the training objective: "" or "rating" (squared error
	// on the ratings: scores are predicted ratings) or "implicit" (weighted
	// ALS on implicit feedback: scores are preferences, about 0 to 1, and
	// the model has no biases and no clamp) or "ease" (an item-item
	// model, ObjectiveItemItem: scores are sums of item-item weights over
	// the user's seen items).
	Objective string `json:"objective,omitempty"`
	// Seen describes the seen-items part (nil when the file has none).
	Seen *SeenInfo `json:"seen,omitempty"`
	// Weights describes the item-item weights (nil for factor models).
	Weights *WeightsInfo `json:"weights,omitempty"`
}

// Objectives recorded in Header.Objective.
const (
	ObjectiveRating   = "rating"
	ObjectiveImplicit = "implicit"
)

// DataInfo identifies and summarises the training set of a model. For a
// private model only NNZ and Dims are kept (see Public): the hash and the
// statistics are functions of the private values.
type DataInfo struct {
	// SHA256 is the hex SHA-256 of the store's dims, nnz, indices (int32
	// little endian, mode by mode) and values (float64 bits little endian).
	SHA256 string `json:"sha256,omitempty"`
	NNZ    int    `json:"nnz"`
	Dims   []int  `json:"dims"`
	// Mean, Min and Max of the training values. Mean is the last-resort
	// prediction of a model without biases.
	Mean float64 `json:"mean,omitempty"`
	Min  float64 `json:"min,omitempty"`
	Max  float64 `json:"max,omitempty"`
}

// Public returns the part of d that does not depend on the rating values
// (the number of ratings and the mode sizes), for private models.
func (d *DataInfo) Public() *DataInfo {
	return &DataInfo{NNZ: d.NNZ, Dims: append([]int(nil), d.Dims...)}
}

// HasStats reports whether the hash and value statistics are present.
func (d *DataInfo) HasStats() bool { return d != nil && d.SHA256 != "" }

// Fingerprint computes the DataInfo of a training store.
func Fingerprint(s *data.Store) *DataInfo {
	h := sha256.New()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(uint64(len(s.Dims)))
	for _, d := range s.Dims {
		put(uint64(d))
	}
	put(uint64(s.NNZ()))
	buf := make([]byte, 0, 4096)
	for _, idx := range s.Idx {
		for _, v := range idx {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			if len(buf) >= 4096-8 {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	info := &DataInfo{NNZ: s.NNZ(), Dims: append([]int(nil), s.Dims...), Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	for _, v := range s.Val {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		if len(buf) >= 4096-8 {
			h.Write(buf)
			buf = buf[:0]
		}
		sum += v
		info.Min = min(info.Min, v)
		info.Max = max(info.Max, v)
	}
	h.Write(buf)
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	if s.NNZ() > 0 {
		info.Mean = sum / float64(s.NNZ())
	} else {
		info.Min, info.Max = 0, 0
	}
	return info
}

// PairSpec describes one pair bias of a model (decomposition.PairBias): the
// bias of the pair (index in mode A, index in mode B / Div), stored for
// Count pairs seen in training.
type PairSpec struct {
	A     int `json:"mode_a"`
	B     int `json:"mode_b"`
	Div   int `json:"period"`
	Count int `json:"count"`
}
