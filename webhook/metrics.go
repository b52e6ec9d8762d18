package webhook

// This file defines the Server's Prometheus metrics.

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec   // by rule and outcome
	latency  *prometheus.HistogramVec // by outcome
	reloads  *prometheus.CounterVec   // by result
	waits    *prometheus.HistogramVec // by rule
}

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "starpod_webhook_admissions_total",
			Help: "Admissions by matched rule (empty for the admission as a whole) and outcome: unchanged, mutated, ignored, denied, error, refused.",
		}, []string{"rule", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "starpod_webhook_admission_duration_seconds",
			Help:    "Time to answer an admission, by outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "starpod_webhook_config_reloads_total",
			Help: "Compiles of the config and its overlays, by result: success, or failure (the last good config kept serving).",
		}, []string{"result"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "starpod_webhook_queue_wait_seconds",
			Help:    "Time an admission waited for one of its rule's workers, by rule.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"rule"}),
	}
	reg.MustRegister(m.requests, m.latency, m.reloads, m.waits,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "starpod_webhook_workers_started_total",
			Help: "Overlay worker processes started by the pools of the config being served; more than the pools' sizes means workers died and were replaced.",
		}, func() float64 { return float64(s.workerStats().Started) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "starpod_webhook_workers_alive",
			Help: "Overlay worker processes alive.",
		}, func() float64 { return float64(s.workerStats().Alive) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "starpod_webhook_in_flight",
			Help: "Admissions being served.",
		}, func() float64 { return float64(len(s.slots)) }),
	)
	return m
}

// observe counts one admission.
func (m *metrics) observe(res *result, d time.Duration) {
	m.requests.WithLabelValues("", res.outcome).Inc()
	for r, o := range res.byRule {
		m.requests.WithLabelValues(r, o).Inc()
	}
	m.latency.WithLabelValues(res.outcome).Observe(d.Seconds())
}

// workerStats sums the counts of the pools of the config being served.
func (s *Server) workerStats() (st struct{ Started, Alive int }) {
	c := s.cur.Load()
	if c == nil {
		return st
	}
	for _, p := range c.pools {
		ps := p.Stats()
		st.Started += ps.Started
		st.Alive += ps.Alive
	}
	return st
}
