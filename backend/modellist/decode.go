package modellist

import (
	"context"
	"fmt"
	"net/url"
)

// list gathers entries across pages: it skips unusable and repeated ids
// and enforces MaxModels over the whole list.
type list struct {
	host    string
	out     []Listed
	seen    map[string]bool
	entries int
}

func newList(host string) *list { return &list{host: host, seen: map[string]bool{}} }

// take counts a page's raw entries against MaxModels before any is
// decoded, so a huge page costs no more than its bytes.
func (l *list) take(n int) error {
	l.entries += n
	if l.entries > MaxModels {
		return fmt.Errorf("modellist: %s lists more than %d models: %w", l.host, MaxModels, ErrTooLarge)
	}
	return nil
}

func (l *list) add(m Listed) {
	if m.ID == "" || len(m.ID) > MaxIDLen || l.seen[m.ID] {
		return
	}
	l.seen[m.ID] = true
	l.out = append(l.out, m)
}

// done returns the list, refusing one whose entries all lacked a usable
// id: that is a shape FreeLane does not read, and reading it as empty
// would make every model look withdrawn.
func (l *list) done() ([]Listed, error) {
	if l.entries > 0 && len(l.out) == 0 {
		return nil, fmt.Errorf("modellist: none of the %d entries %s listed has a usable id", l.entries, l.host)
	}
	if l.out == nil {
		l.out = []Listed{}
	}
	return l.out, nil
}

func notAList(host string, err error) error {
	return fmt.Errorf("modellist: %s answered with something other than a model list: %v", host, err)
}

// read gathers the list page by page. A page's next link is followed
// only on the base URL's scheme and host; a link elsewhere ends the list,
// since following it would send the key there.
func (f *fetcher) read(ctx context.Context) ([]Listed, error) {
	l := newList(f.base.Host)
	u, err := f.firstURL()
	if err != nil {
		return nil, err
	}
	for page := 1; ; page++ {
		body, err := f.get(ctx, u)
		if err != nil {
			return nil, err
		}
		p, err := f.models.ReadPage(body)
		if err != nil {
			return nil, notAList(f.base.Host, err)
		}
		if err := l.take(len(p.Models)); err != nil {
			return nil, err
		}
		for _, m := range p.Models {
			l.add(m)
		}
		next := f.sameOrigin(u, p.Next)
		if next == nil {
			break
		}
		if page >= MaxPages {
			return nil, fmt.Errorf("modellist: %s pages its list past %d pages: %w", f.base.Host, MaxPages, ErrTooLarge)
		}
		u = next
	}
	return l.done()
}

// sameOrigin resolves a next-page link against the current page and keeps
// it only on the base URL's scheme and host, and only when it is another
// page.
func (f *fetcher) sameOrigin(cur *url.URL, link string) *url.URL {
	if link == "" {
		return nil
	}
	next, err := cur.Parse(link)
	if err != nil || next.Scheme != f.base.Scheme || next.Host != f.base.Host || next.String() == cur.String() {
		return nil
	}
	next.Fragment = ""
	return next
}
