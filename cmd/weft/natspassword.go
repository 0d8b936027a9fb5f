package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// natsTarget is the pair --nats-url and --nats-password-file: whichever is
// set last, out is the URL with the file's password in each of its URLs,
// in place of any password they give (natsFlag). The file is read when its
// flag is set, once.
type natsTarget struct {
	url, password string
	out           *string
}

// resolve writes the URL to dial into out; an error names what is wrong
// with the pair. Without a URL yet, out stays empty: a --nats-url given
// later resolves it.
func (t *natsTarget) resolve() error {
	if t.password == "" || t.url == "" {
		*t.out = t.url
		return nil
	}
	parts := strings.Split(t.url, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.Host == "" {
			return fmt.Errorf("with a password file, each NATS URL is nats://user@host:port, got %s", redactNATS(p))
		}
		if u.User == nil || u.User.Username() == "" {
			return fmt.Errorf("the NATS URL %s names no user for the password file: nats://user@host:port", u.Redacted())
		}
		u.User = url.UserPassword(u.User.Username(), t.password)
		parts[i] = u.String()
	}
	*t.out = strings.Join(parts, ",")
	return nil
}

// natsURLValue is --nats-url's flag.Value.
type natsURLValue struct{ t *natsTarget }

func (v natsURLValue) Set(s string) error {
	v.t.url = s
	return v.t.resolve()
}

// String is the URL without its password: flag prints it as the default.
func (v natsURLValue) String() string {
	if v.t == nil {
		return ""
	}
	return redactNATS(v.t.url)
}

// natsPasswordFileValue is --nats-password-file's flag.Value: Set reads
// the file, whose content up to a final line break is the password.
type natsPasswordFileValue struct{ t *natsTarget }

func (v natsPasswordFileValue) Set(path string) error {
	data, err := os.ReadFile(path) //nolint:gosec // the operator names the file
	if err != nil {
		return fmt.Errorf("NATS password file: %w", err)
	}
	v.t.password = strings.TrimRight(string(data), "\r\n")
	if v.t.password == "" {
		return errors.New("NATS password file " + path + " is empty")
	}
	return v.t.resolve()
}

// String is empty: the file's name is not printed as a default.
func (v natsPasswordFileValue) String() string { return "" }
