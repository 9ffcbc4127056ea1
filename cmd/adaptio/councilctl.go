package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
)

// operatorFlags are the flags of "adaptio council" that hold learning
// back: shadow mode, the guardrail, the audit log and the health threshold
// (operators' requests are verified with the keyring of --keys).
type operatorFlags struct {
	Shadow       bool
	Guardrail    council.Guardrail
	AuditLog     string
	HealthRounds int
}

// addOperatorFlags registers the operator flags of "adaptio council".
func addOperatorFlags(cmd *cobra.Command, o *operatorFlags) {
	f := cmd.Flags()
	g := council.DefaultGuardrail()
	f.BoolVar(&o.Shadow, "shadow", false, "shadow mode: the Council learns and logs what it would decide (learned_ns in the decision log), every decision keeps --default-window (or a pinned window) in force; set --default-window to the window the forwarders run. Persisted: \"adaptio council shadow off\" ends it")
	f.Float64Var(&o.Guardrail.Share, "guardrail-share", g.Share, "guardrail: share of each pattern's decisions kept at --default-window as a control (0 turns the guardrail off)")
	f.Float64Var(&o.Guardrail.Threshold, "guardrail-threshold", g.Threshold, "guardrail: fall back to the control when the learned window's mean reward is lower than the control's by more than this fraction of it (and by two standard errors)")
	f.IntVar(&o.Guardrail.Span, "guardrail-span", g.Span, "guardrail: rounds over which the learned window's and the control's rewards are compared (sliding)")
	f.IntVar(&o.Guardrail.MinSamples, "guardrail-min-samples", g.MinSamples, "guardrail: rewards of each, learned window and control, needed in the span before it may fall back")
	f.IntVar(&o.Guardrail.Cooldown, "guardrail-cooldown", 0, "guardrail: rounds after a fallback before learning is tried again (0: until \"adaptio council release\")")
	f.StringVar(&o.AuditLog, "audit-log", "", "append one JSON line per operator action (pin, release, shadow) and guardrail fallback to this file, synced after each (empty: the actions are only logged)")
	f.IntVar(&o.HealthRounds, "health-rounds", service.DefaultHealthRounds, "/healthz reports degraded when the learned state was last written more than this many rounds ago, or a known I/O node sent nothing for this many of its intervals")
}

// apply sets opts from the flags; the returned function closes the audit log.
func (o operatorFlags) apply(opts *service.Options) (func(), error) {
	opts.Core.Shadow, opts.Core.Guardrail, opts.HealthRounds = o.Shadow, o.Guardrail, o.HealthRounds
	if o.HealthRounds < 0 {
		return nil, fmt.Errorf("--health-rounds %d: want >= 1", o.HealthRounds)
	}
	if o.AuditLog == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(o.AuditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	opts.AuditLog = f
	return func() { f.Close() }, nil
}

// ctlConfig is the configuration of the operator subcommands.
type ctlConfig struct {
	NATS     string
	Prefix   string
	Keys     string
	Seed     string
	Security service.Security
	Timeout  time.Duration
	JSON     bool
	Reason   string
}

func addCtlFlags(cmd *cobra.Command, c *ctlConfig) {
	f := cmd.Flags()
	f.StringVar(&c.NATS, "nats", "nats://127.0.0.1:4222", "NATS URL(s) of the Council's server or cluster")
	f.StringVar(&c.Prefix, "prefix", service.DefaultPrefix, "subject prefix of the Council's group")
	f.StringVar(&c.Keys, "keys", "", "key directory (adaptio keys init DIR): signs with DIR/operator.nk and, unless --nkey-seed or --user is given, authenticates to NATS with it")
	f.StringVar(&c.Seed, "operator-seed", "", "operator seed file (SU..., mode 0600) to sign with, instead of --keys DIR's (also used to authenticate to NATS unless --nkey-seed or --user is given)")
	f.DurationVar(&c.Timeout, "timeout", 5*time.Second, "how long to wait for the Council's answer")
	f.BoolVar(&c.JSON, "json", false, "print the Council's answer as JSON")
	addSecurityFlags(cmd, &c.Security)
	_ = f.MarkHidden("allow-nkey")
}

// newCouncilCtlCmds returns "adaptio council pin", "release", "status" and "shadow".
func newCouncilCtlCmds() []*cobra.Command {
	var pin, rel, st, sh ctlConfig
	var pattern, op, relPattern, relOp string
	var window time.Duration
	var all bool
	pinCmd := &cobra.Command{
		Use:   "pin --pattern P --op OP --window W",
		Short: "Keep a window in force for one access pattern and operation, whatever the Council learns",
		Long: `Sends a signed operator request to the Council (NATS subject <prefix>.admin): from its next
decision on, I/O nodes run --window for --pattern (FPP, SC or SS) and --op (read or write)
until "adaptio council release". Learning goes on and logs what it would have chosen. The pin
is part of the learned state (it survives a restart) and is written to the Council's audit
log with the operator's key and --reason.`,
		Example: `  adaptio council pin --keys /etc/adaptio/keys --pattern ss --op write --window 4ms --reason "vendor advice"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pattern == "" || op == "" || window <= 0 {
				return errors.New("council pin: --pattern, --op and a positive --window are required (e.g. --pattern ss --op write --window 4ms)")
			}
			return runCtl(cmd, pin, service.AdminRequest{Action: service.ActionPin, Pattern: pattern, Op: op, Window: window, Reason: pin.Reason})
		},
	}
	addCtlFlags(pinCmd, &pin)
	pinCmd.Flags().StringVar(&pattern, "pattern", "", "access pattern: FPP, SC or SS")
	pinCmd.Flags().StringVar(&op, "op", "", "operation: read or write")
	pinCmd.Flags().DurationVar(&window, "window", 0, "TWINS window to keep in force, one of the Council's --windows (e.g. 4ms)")
	pinCmd.Flags().StringVar(&pin.Reason, "reason", "", "why, for the audit log")

	relCmd := &cobra.Command{
		Use:   "release (--pattern P --op OP | --all)",
		Short: "Give a pattern and operation back to learning: remove its pin and the guardrail's fallback",
		Long: `Sends a signed operator request to the Council: removes the pin of --pattern and --op and
the guardrail's fallback, if any (--all: every pin and fallback). Learning is in force again
from the next decision (unless the Council is in shadow mode). Audited like pin.`,
		Example: `  adaptio council release --keys /etc/adaptio/keys --pattern ss --op write
  adaptio council release --keys /etc/adaptio/keys --all --reason "end of maintenance"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case all && (relPattern != "" || relOp != ""):
				return errors.New("council release: --all or --pattern and --op, not both")
			case all:
				return runCtl(cmd, rel, service.AdminRequest{Action: service.ActionReleaseAll, Reason: rel.Reason})
			case relPattern == "" || relOp == "":
				return errors.New("council release: --pattern and --op are required (or --all)")
			}
			return runCtl(cmd, rel, service.AdminRequest{Action: service.ActionRelease, Pattern: relPattern, Op: relOp, Reason: rel.Reason})
		},
	}
	addCtlFlags(relCmd, &rel)
	relCmd.Flags().StringVar(&relPattern, "pattern", "", "access pattern: FPP, SC or SS")
	relCmd.Flags().StringVar(&relOp, "op", "", "operation: read or write")
	relCmd.Flags().BoolVar(&all, "all", false, "release every pin and guardrail fallback")
	relCmd.Flags().StringVar(&rel.Reason, "reason", "", "why, for the audit log")

	stCmd := &cobra.Command{
		Use:   "status",
		Short: "Show the Council's pins, guardrail state, shadow mode and health",
		Long: `Asks the Council (a signed operator request, which changes nothing) for its operator state:
shadow mode, the control window, pins, the guardrail's configuration and fallbacks, and the
reasons /healthz would report it degraded.`,
		Example: `  adaptio council status --keys /etc/adaptio/keys`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCtl(cmd, st, service.AdminRequest{Action: service.ActionStatus})
		},
	}
	addCtlFlags(stCmd, &st)

	shCmd := &cobra.Command{
		Use:   "shadow on|off",
		Short: "Turn shadow mode on or off at run time",
		Long: `Sends a signed operator request to the Council: "on" keeps --default-window (or a pinned
window) in force at every decision while the Council learns and logs what it would have
chosen; "off" puts learning in force. The mode is persisted with the learned state. Audited.`,
		Example: `  adaptio council shadow off --keys /etc/adaptio/keys --reason "evaluated: adaptio eval log --shadow"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var action string
			switch args[0] {
			case "on":
				action = service.ActionShadowOn
			case "off":
				action = service.ActionShadowOff
			default:
				return fmt.Errorf("council shadow: %q: want on or off", args[0])
			}
			return runCtl(cmd, sh, service.AdminRequest{Action: action, Reason: sh.Reason})
		},
	}
	addCtlFlags(shCmd, &sh)
	shCmd.Flags().StringVar(&sh.Reason, "reason", "", "why, for the audit log")
	return []*cobra.Command{pinCmd, relCmd, stCmd, shCmd}
}

// runCtl signs and sends r to the Council and prints its answer.
func runCtl(cmd *cobra.Command, c ctlConfig, r service.AdminRequest) error {
	what := "council " + cmd.Name()
	c.Security.Password = os.Getenv("ADAPTIO_NATS_PASSWORD")
	if c.Security.User != "" && c.Security.Password == "" {
		return fmt.Errorf("%s: --user needs the password in $ADAPTIO_NATS_PASSWORD", what)
	}
	seed := c.Seed
	if seed == "" && c.Keys != "" {
		seed = filepath.Join(c.Keys, keyring.OperatorSeed)
	}
	var signer *keyring.Signer
	if seed != "" {
		var err error
		if signer, err = keyring.ReadSigner(seed); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if c.Security.NKeySeedFile == "" && c.Security.User == "" {
			c.Security.NKeySeedFile = seed
		}
	}
	copts, err := c.Security.ClientOptions()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	nc, err := nats.Connect(c.NATS, append(copts, nats.Name("adaptio "+what), nats.Timeout(c.Timeout))...)
	if err != nil {
		return fmt.Errorf("%s: connect %s: %w (is the Council's NATS server there? credentials: --keys, --nkey-seed or --user)", what, c.NATS, err)
	}
	defer nc.Close()
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	r.V, r.ID, r.At = 1, hex.EncodeToString(id), time.Now()
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	subject := service.AdminSubject(c.Prefix)
	m := &nats.Msg{Subject: subject, Data: body}
	if signer != nil {
		if m, err = signer.Msg(subject, body); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	resp, err := nc.RequestMsg(m, c.Timeout)
	if err != nil {
		return fmt.Errorf("%s: no answer on %s within %v: %w (is a Council of prefix %q running there? with a keyring it needs --keys or --operator-seed)", what, subject, c.Timeout, err, c.Prefix)
	}
	var reply service.AdminReply
	if err := json.Unmarshal(resp.Data, &reply); err != nil {
		return fmt.Errorf("%s: bad answer from the Council: %w", what, err)
	}
	out := cmd.OutOrStdout()
	if c.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reply); err != nil {
			return err
		}
	} else if reply.OK {
		printOperator(out, r, reply)
	}
	if !reply.OK {
		return fmt.Errorf("%s: refused: %s", what, reply.Error)
	}
	return nil
}

// printOperator prints the Council's answer for people.
func printOperator(w io.Writer, r service.AdminRequest, reply service.AdminReply) {
	op := reply.Operator
	switch r.Action {
	case service.ActionPin:
		ctx, _ := council.ParseContext(r.Pattern, r.Op)
		fmt.Fprintf(w, "pinned %s at %v from the decision after round %d\n", ctx, r.Window, reply.Round)
	case service.ActionRelease, service.ActionReleaseAll:
		if len(reply.Released) == 0 {
			fmt.Fprintln(w, "nothing to release: no pin or guardrail fallback there")
		} else {
			fmt.Fprintf(w, "released %s: learning in force from the next decision\n", strings.Join(reply.Released, ", "))
		}
	case service.ActionShadowOn, service.ActionShadowOff:
		fmt.Fprintf(w, "shadow mode %s\n", map[bool]string{true: "on", false: "off"}[op.Shadow])
	}
	fmt.Fprintf(w, "round %d, shadow %v, control window %v\n", reply.Round, op.Shadow, time.Duration(op.Control))
	if len(op.Pins) == 0 {
		fmt.Fprintln(w, "pins: none")
	}
	for _, p := range op.Pins {
		fmt.Fprintf(w, "pin: %s at %v\n", p.Context, p.Window)
	}
	if g := op.Guardrail; g.Enabled() {
		until := "until released"
		if g.Cooldown > 0 {
			until = fmt.Sprintf("for %d rounds", g.Cooldown)
		}
		fmt.Fprintf(w, "guardrail: on, %.0f%% control, falls back when %.0f%% worse over %d rounds (%d rewards of each), %s\n",
			100*g.Share, 100*g.Threshold, g.Span, g.MinSamples, until)
	} else {
		fmt.Fprintln(w, "guardrail: off")
	}
	for _, f := range op.Fallbacks {
		fmt.Fprintf(w, "fallback: %s to %v since round %d: learned %v earned %.4g, the control %.4g\n", f.Context, f.Control, f.Round, f.Learned, f.LearnedMean, f.ControlMean)
	}
	if len(reply.Health) == 0 {
		fmt.Fprintln(w, "health: ok")
	}
	for _, h := range reply.Health {
		fmt.Fprintf(w, "degraded: %s\n", h)
	}
}
