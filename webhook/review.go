package webhook

// This file defines a review without a server: the answer to one AdmissionRequest, and the
// object as the API server would store it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
)

// Review answers req as /mutate would, within the Server's request timeout, and returns the
// response and the object the API server would store: req's object with the response's patch
// applied (req's object itself when there is no patch, nil when the admission is denied). It
// is for trying a config without a cluster or TLS: starpod webhook review.
func (s *Server) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, []byte, error) {
	if req == nil {
		return nil, nil, errors.New("got no request")
	}
	c := s.cur.Load()
	if c == nil {
		return nil, nil, errors.New("no config compiled")
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(s.opts.RequestTimeout-answerMargin(s.opts.RequestTimeout)))
	defer cancel()
	res := admit(ctx, c, req)
	s.metrics.observe(res, time.Since(start))
	resp := res.resp
	if !resp.Allowed {
		return resp, nil, nil
	}
	obj := req.Object.Raw
	if resp.Patch != nil {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			return resp, nil, fmt.Errorf("decoding the patch: %w", err)
		}
		if obj, err = p.Apply(obj); err != nil {
			return resp, nil, fmt.Errorf("applying the patch: %w", err)
		}
	}
	return resp, obj, nil
}
