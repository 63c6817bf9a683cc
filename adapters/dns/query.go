package dns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mdns "github.com/miekg/dns"
)

// query asks the servers in turn for the name's records of type t and
// returns them from the first complete answer: nil for a name that does
// not exist or has no such records. It fails with ErrResolve when no
// server gives a complete answer.
func (s *Source) query(ctx context.Context, t uint16) ([]mdns.RR, error) {
	var errs []error
	for _, server := range s.cfg.servers {
		rrs, err := s.ask(ctx, server, t)
		if err == nil {
			return rrs, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: %s %s: %w", ErrResolve, strings.TrimSuffix(s.name, "."), mdns.TypeToString[t], errors.Join(errs...))
}

// ask asks one server, over UDP and, if the answer is truncated, over TCP.
func (s *Source) ask(ctx context.Context, server string, t uint16) ([]mdns.RR, error) {
	q := new(mdns.Msg)
	q.SetQuestion(s.name, t)
	q.RecursionDesired = true
	q.SetEdns0(s.cfg.udpSize, false)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	udp := &mdns.Client{Net: "udp", UDPSize: s.cfg.udpSize, Timeout: s.cfg.timeout}
	r, _, err := udp.ExchangeContext(ctx, q, server)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", server, err)
	}
	if r.Truncated {
		// Never a partial answer: the whole of it over TCP, or nothing.
		tcp := &mdns.Client{Net: "tcp", Timeout: s.cfg.timeout}
		r, _, err = tcp.ExchangeContext(ctx, q, server)
		if err != nil {
			return nil, fmt.Errorf("%s: answer truncated over UDP, and over TCP: %w", server, err)
		}
		if r.Truncated {
			return nil, fmt.Errorf("%s: answer truncated over TCP", server)
		}
	}
	switch {
	case len(r.Question) != 1 || !strings.EqualFold(r.Question[0].Name, s.name) || r.Question[0].Qtype != t:
		return nil, fmt.Errorf("%s: an answer to another question", server)
	case r.Rcode == mdns.RcodeNameError:
		return nil, nil
	case r.Rcode != mdns.RcodeSuccess:
		return nil, fmt.Errorf("%s: %s", server, mdns.RcodeToString[r.Rcode])
	}
	var out []mdns.RR
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == t {
			out = append(out, rr)
		}
	}
	return out, nil
}
