// `cloudflare:email` as alarmkit's JavaScript host provides it: `EmailMessage`, the message a
// send_email binding sends (workerd: src/cloudflare/email.ts). Sending is refused by name, as every
// send_email binding is (alarmkit/workers/wrangler.py): making one is plain data.
export class EmailMessage {
  constructor(from, to, raw) {
    this.from = from;
    this.to = to;
    this.raw = raw;
  }
}
export default { EmailMessage };
