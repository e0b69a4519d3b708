// A real certificate authority for the TLS tests, made with openssl in a temporary
// directory: a CA, a server certificate for 127.0.0.1 (etcd), a client certificate signed by
// the CA, and a second CA that signed nothing of these (a wrong trust anchor).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  otherCa: string;
}

const openssl = (dir: string, ...args: string[]) =>
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

function selfSigned(dir: string, name: string, cn: string): void {
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${cn}`,
  );
}

function signed(dir: string, name: string, cn: string, ext: string): void {
  openssl(
    dir,
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${cn}`,
  );
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
}

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'fk-ca-'));
  selfSigned(dir, 'ca', 'fibkeeper test CA');
  selfSigned(dir, 'other', 'another CA');
  signed(
    dir,
    'server',
    'etcd',
    'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  signed(dir, 'client', 'fibkeeper', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p('ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    otherCa: p('other.pem'),
  };
}
