package modellist

import "slices"

// Diff compares the ids of an earlier list with a later one: joined are
// the ids only the later list has, withdrawn the ids only the earlier one
// has, each sorted and without repeats.
func Diff(before, after []string) (joined, withdrawn []string) {
	was := make(map[string]bool, len(before))
	for _, id := range before {
		was[id] = true
	}
	is := make(map[string]bool, len(after))
	for _, id := range after {
		is[id] = true
	}
	for id := range is {
		if !was[id] {
			joined = append(joined, id)
		}
	}
	for id := range was {
		if !is[id] {
			withdrawn = append(withdrawn, id)
		}
	}
	slices.Sort(joined)
	slices.Sort(withdrawn)
	return joined, withdrawn
}

// IDs returns the ids of a list, in its order.
func IDs(list []Listed) []string {
	ids := make([]string, len(list))
	for i, m := range list {
		ids[i] = m.ID
	}
	return ids
}

// FreeIDs returns the ids of the list's free models, in its order.
func FreeIDs(list []Listed) []string {
	var ids []string
	for _, m := range list {
		if m.Free {
			ids = append(ids, m.ID)
		}
	}
	return ids
}
