// A bulk body of the control API: text/plain, one IP a line (server.ts reads it as a stream).

/**
 * The lines of a bulk body as read (without their line ends), parsed and checked by the
 * route (parseIpLines), which knows whether they are IPs to add or to release.
 */
export class IpLines {
  constructor(readonly lines: readonly string[]) {}
}
