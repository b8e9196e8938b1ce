package main

import (
	"bufio"
	"encoding/csv"
	"io"
	"os"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
)

// predict --input accepts two kinds of file: a CSV of user,item[,time]
// pairs (read by predictMany), or a rating log in any format the loader
// reads (a test split, say), read with the input flags (--columns,
// --format, ...). For a rating log every observation is predicted and the
// output carries its rating beside the prediction, like Surprise's
// algo.test: user, item, time, rating, prediction, fallback.

// predictIsLog reports whether --input names a rating log rather than a
// CSV of pairs: the loader's flags were given (--columns, --format,
// --delimiter), the name says another format than CSV (TSV, dat, Arrow,
// Parquet) or gzip, the first line is not comma-separated but has another
// delimiter the loader detects (the tab of the TSV data split writes), or
// the text's header names a rating column, or its first data row has four
// or more fields.
func predictIsLog(o *predictOptions, path string) bool {
	if o.LogFlags {
		return true
	}
	if path == "-" {
		return false
	}
	if f := data.DetectFormat(path); f != data.FormatAuto && f != data.FormatCSV {
		return true
	}
	if strings.HasSuffix(strings.ToLower(path), ".gz") {
		return true
	}
	fh, err := os.Open(path)
	if err != nil {
		return false // predictMany reports the error
	}
	defer fh.Close()
	br := bufio.NewReader(io.LimitReader(fh, 1<<16))
	head, _ := br.Peek(4096) // fewer bytes at the end of the file
	line, _, _ := strings.Cut(string(head), "\n")
	if !strings.Contains(line, ",") && (strings.ContainsAny(line, "\t;|") || strings.Contains(line, "::")) {
		return true
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	for line := 1; line <= 2; line++ {
		rec, err := cr.Read()
		if err != nil {
			return false
		}
		if line == 1 && len(rec) > 0 && predictIsHeader(rec[0]) {
			for _, f := range rec {
				if strings.Contains(strings.ToLower(f), "rating") {
					return true
				}
			}
			continue
		}
		return len(rec) >= 4
	}
	return false
}

// predictLog predicts every observation of the rating log o.Input.
func predictLog(o *predictOptions, s *iostreams, p *models.Predictor, w io.Writer) error {
	opts := o.Load
	opts.Builder.KeepTimestamps = true
	st, _, err := loadLog(s, o.globalOptions, o.Input, opts)
	if err != nil {
		return err
	}
	sink, err := newPredictSink(o.Format, w, true)
	if err != nil {
		return err
	}
	for e, r := range st.Val {
		user, item := st.Dicts[0].String(st.Idx[0][e]), st.Dicts[1].String(st.Idx[1][e])
		var t *int64
		if st.Timestamps != nil {
			v := st.Timestamps[e]
			t = &v
		}
		v, fb := p.Predict(user, item, t)
		if err := predictStrict(o.Strict, fb, user, item); err != nil {
			return err
		}
		rating := r
		if err := sink.Write(predictResult{User: user, Item: item, Time: t, Rating: &rating, Prediction: v, Fallback: fb.String()}); err != nil {
			return err
		}
	}
	return sink.Close()
}
