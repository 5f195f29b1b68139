package router

import "freelane/backend/llm"

// RankOnce resolves req's model and ranks its candidates as a request
// does, and returns how many there are: the selection step alone, for
// benchmarks.
func (r *Router) RankOnce(req *llm.Request) int {
	route, err := r.Table().Resolve(req.Model)
	if err != nil {
		panic(err)
	}
	sel := getSelection()
	r.rank(req, route, true, sel)
	n := len(sel.seq)
	putSelection(sel)
	return n
}
