import { describe, expect, it } from 'vitest';
import { formatHostPort, parseHostPort } from './index.js';

describe('parseHostPort', () => {
  it('reads IPv4 and bracketed IPv6 with a port', () => {
    expect(parseHostPort('127.0.0.1:9470')).toEqual({ host: '127.0.0.1', port: 9470, family: 4 });
    expect(parseHostPort('[::1]:1')).toEqual({ host: '::1', port: 1, family: 6 });
    expect(parseHostPort('[FD00::0:5]:9470')).toEqual({ host: 'fd00::5', port: 9470, family: 6 });
    expect(parseHostPort('localhost:80')).toEqual({ host: 'localhost', port: 80, family: 0 });
    expect(parseHostPort('0.0.0.0:0')).toEqual({ host: '0.0.0.0', port: 0, family: 4 });
  });

  it('takes a bare address (as the Kubernetes downward API gives it) with the default port', () => {
    const o = { defaultPort: 9470 };
    expect(parseHostPort('10.0.0.5', o)).toEqual({ host: '10.0.0.5', port: 9470, family: 4 });
    expect(parseHostPort('fd00::5', o)).toEqual({ host: 'fd00::5', port: 9470, family: 6 });
    expect(parseHostPort('[fd00::5]', o)).toEqual({ host: 'fd00::5', port: 9470, family: 6 });
    // Unbracketed, a trailing group is part of the address: it can never be a port.
    expect(parseHostPort('fd00::5:9470', o)).toEqual({
      host: 'fd00::5:9470',
      port: 9470,
      family: 6,
    });
  });

  it('refuses what is not host:port, naming the fix', () => {
    expect(() => parseHostPort('10.0.0.5')).toThrow(
      /"10\.0\.0\.5" has no port: write 10\.0\.0\.5:PORT/,
    );
    expect(() => parseHostPort('fd00::5')).toThrow(/write \[fd00::5\]:PORT/);
    expect(() => parseHostPort('9470')).toThrow(/host:port/);
    expect(() => parseHostPort('1.2.3.4:70000')).toThrow(/port 70000 is above 65535/);
    expect(() => parseHostPort('300.1.1.1:80')).toThrow(/300\.1\.1\.1/);
    expect(() => parseHostPort('[10.0.0.5]:80')).toThrow(/brackets are for IPv6/);
    expect(() => parseHostPort('[fe80::1%eth0]:80')).toThrow(/zone/);
    expect(() => parseHostPort('example.com:80')).toThrow(/IP address or localhost/);
    expect(() => parseHostPort('')).toThrow(/empty/);
    expect(() => parseHostPort('1.2.3.4:')).toThrow(/host:port/);
  });

  it('formats what it parses', () => {
    for (const t of ['127.0.0.1:9470', '[fd00::5]:9470', 'localhost:1']) {
      expect(formatHostPort(parseHostPort(t))).toBe(t);
    }
    expect(formatHostPort(parseHostPort('fd00::5', { defaultPort: 9470 }))).toBe('[fd00::5]:9470');
  });
});
