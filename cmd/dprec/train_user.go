package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// trainNoUser is the one placeholder id of a user-level model's user mode:
// the file holds no user dictionary, only this id with an all-zero row
// (models need a non-empty user mode), whoever is in the log.
const trainNoUser = "(no user released: user-level privacy)"

// userLevel is the preparation of a --privacy-unit user run.
type userLevel struct {
	// store is the training log on the public domain, bounded to k
	// ratings per user (one per item).
	store *data.Store
	// selection is the private item selection (nil with --items).
	selection *completion.ItemSelection
}

// trainUserLevel prepares a user-level run before training: the time
// range (--time-from/--time-to), the item domain (--items, or a private
// selection whose budget is taken from o), the drops (said on stderr:
// they are functions of the private log and are never saved) and the
// contribution bound.
func trainUserLevel(c *cli.Context, train *data.Store, o *completion.PrivateOptions) (*userLevel, error) {
	var dom completion.UserDomain
	var err error
	if dom.Time, err = trainTimeRange(c, train); err != nil {
		return nil, err
	}
	ul := &userLevel{}
	if path := c.String("items"); path != "" {
		if dom.Items, err = readCatalogue(path, train.Dicts[1]); err != nil {
			return nil, cli.Exit(fmt.Sprintf("--items: %v", err), exitUsage)
		}
	} else {
		// Time restriction first; items selected below, among the items
		// the bounded store rates only (completion.SelectItems), never
		// this dictionary's (it lists items whose ratings were dropped).
		dom.Items = train.Dicts[1]
	}
	st, drops, err := completion.RestrictToDomain(train, dom)
	if err != nil {
		return nil, err
	}
	if st, err = completion.BoundForUnit(st, o); err != nil {
		return nil, err
	}
	if !c.IsSet("items") {
		if st, ul.selection, err = trainSelectItems(c, st, o); err != nil {
			return nil, err
		}
	}
	if !quiet(c) && (drops.Items > 0 || drops.Time > 0) {
		fmt.Fprintf(c.App.ErrWriter, "note: dropped %d ratings of items not in --items and %d outside the time range (%d users left with none); the counts are for you only: they are not saved in the model file\n", drops.Items, drops.Time, drops.Users)
	}
	ul.store = st
	return ul, nil
}

// trainSelectItems selects the items privately with its share of the
// budget, taken from o, and restricts st to them.
func trainSelectItems(c *cli.Context, st *data.Store, o *completion.PrivateOptions) (*data.Store, *completion.ItemSelection, error) {
	eps := trainSelectionShare * o.Epsilon
	if c.IsSet("selection-epsilon") {
		eps = c.Float64("selection-epsilon")
	}
	if !(eps > 0 && eps < o.Epsilon) {
		return nil, nil, cli.Exit(fmt.Sprintf("--selection-epsilon %g: must be in (0, --epsilon %g)", eps, o.Epsilon), exitUsage)
	}
	if !(o.Delta > 0) {
		return nil, nil, cli.Exit("--privacy-unit user without --items selects the items privately and needs --delta > 0", exitUsage)
	}
	b := perturb.Budget{Epsilon: eps, Delta: o.Delta / 2}
	sel, err := completion.SelectItems(st, o.MaxRatingsPerUser, b, o.Noise)
	if err != nil {
		return nil, nil, err
	}
	out, _, err := completion.RestrictToDomain(st, completion.UserDomain{Items: sel.Items, Time: st.Time})
	if err != nil {
		return nil, nil, err
	}
	o.Epsilon -= b.Epsilon
	o.Delta -= b.Delta
	o.SelectedItems = true
	// The number of users, the number of ratings and the global mean are
	// released from the bounded log before the selection (all its items),
	// so that they stay accurate when the selection keeps few items.
	o.Scalars = st
	return out, sel, nil
}

// trainTimeRange reads the public time range of a user-level run.
func trainTimeRange(c *cli.Context, train *data.Store) (*data.TimeBucketing, error) {
	if train.Order() == 2 {
		if c.IsSet("time-from") || c.IsSet("time-to") {
			return nil, cli.Exit("--time-from/--time-to: the log has no time mode (--time-unit none)", exitUsage)
		}
		return nil, nil
	}
	if !c.IsSet("time-from") || !c.IsSet("time-to") {
		return nil, cli.Exit("--privacy-unit user with a time mode needs the public time range --time-from and --time-to (the log's own range would depend on who is in it), or --time-unit none", exitUsage)
	}
	from, err := predictParseTime(c.String("time-from"))
	if err != nil || from == nil {
		return nil, cli.Exit(fmt.Sprintf("--time-from: %v", err), exitUsage)
	}
	to, err := predictParseTime(c.String("time-to"))
	if err != nil || to == nil {
		return nil, cli.Exit(fmt.Sprintf("--time-to: %v", err), exitUsage)
	}
	tb, err := completion.TimeRange(train.Time.Unit, *from, *to)
	if err != nil {
		return nil, cli.Exit(err.Error(), exitUsage)
	}
	return tb, nil
}

// readCatalogue reads a public item catalogue: a CSV whose first column is
// the item id (an optional header row is skipped), as a dictionary of the
// same kind as like (integer ids when the log's are integers).
func readCatalogue(path string, like *data.Dict) (*data.Dict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var d *data.Dict
	if like != nil && like.IsString {
		d = data.NewStringDict(like.Name)
	} else {
		d = data.NewIntDict("item")
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
			if line == 1 && predictIsHeader(id) {
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

// dims are the model's mode sizes: one placeholder user (no user is
// released), then the public item and time domains.
func (ul *userLevel) dims() []int { return append([]int{1}, ul.store.Dims[1:]...) }

// release returns what the model file of a user-level run carries: the
// dictionaries with the user one replaced by the one placeholder id, and
// a data description with the (public) mode sizes only, no count; it adds
// a private item selection to the report.
func (ul *userLevel) release(dicts []*data.Dict, m *decomposition.Model, rep *perturb.Report) ([]*data.Dict, *models.DataInfo, error) {
	users, err := data.DictFromStrings("user", []string{trainNoUser})
	if err != nil {
		return nil, nil, err
	}
	out := append([]*data.Dict(nil), dicts...)
	out[0] = users
	if ul.selection != nil {
		ul.selection.Compose(rep)
	}
	return out, &models.DataInfo{Dims: append([]int(nil), m.Dims...)}, nil
}

// trainPrivacyPlan reads the privacy flags, prepares a user-level run
// (nil for the entry unit and non-private runs) and builds the plug-in.
func trainPrivacyPlan(c *cli.Context, train *data.Store) (*userLevel, completion.Privacy, error) {
	o, err := trainPrivateOptions(c)
	if err != nil || o == nil {
		return nil, completion.NoPrivacy{}, err
	}
	var ul *userLevel
	if o.Unit == completion.UnitUser {
		if ul, err = trainUserLevel(c, train, o); err != nil {
			return nil, nil, err
		}
	}
	p, err := trainPrivacyMode(c.String("privacy"), o)
	return ul, p, err
}
