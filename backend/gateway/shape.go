package gateway

import (
	"freelane/backend/config"
	"freelane/backend/llm"
	"freelane/backend/shape"
)

// shapeSettings derives the shaper's limits from a configuration: each
// provider's and model's rpm, concurrency and queue wait.
func shapeSettings(cfg *config.Config) shape.Settings {
	s := shape.Settings{Providers: map[string]shape.Limits{}, Backends: map[llm.BackendID]shape.Limits{}}
	for _, p := range cfg.Providers {
		if p.Limits != nil {
			s.Providers[p.Name] = toShapeLimits(p.Limits)
		}
		for _, m := range p.Models {
			if m.Limits != nil {
				s.Backends[llm.BackendID{Provider: p.Name, Model: m.ID}] = toShapeLimits(m.Limits)
			}
		}
	}
	return s
}

func toShapeLimits(l *config.Limits) shape.Limits {
	return shape.Limits{RPM: int64(l.RPM), Concurrency: int64(l.Concurrency), QueueWait: l.QueueWait}
}
