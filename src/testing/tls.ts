/**
 * A private CA for TLS tests, made fresh by the machine's `openssl`: a self-signed CA and a leaf certificate it
 * signed for `127.0.0.1` and `localhost`, written as PEM files into a directory. Nothing is checked in, so no key
 * ever expires or leaks; a second, unrelated CA is made the same way to prove that trust really is checked.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestCa {
  /** The CA certificate (what `agent_ca_file` / `--ca-file` points at). */
  caFile: string;
  /** The leaf's key and certificate, for the server. */
  key: string;
  cert: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA and a leaf for 127.0.0.1/localhost in `dir` (files named `<name>-ca.pem`, `<name>-leaf.{key,pem}`). */
export function makeTestCa(dir: string, name = 'test'): TestCa {
  const file = (suffix: string): string => path.join(dir, `${name}-${suffix}`);
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name} test CA`,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.pem'),
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  openssl(
    [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=127.0.0.1',
      '-keyout',
      file('leaf.key'),
      '-out',
      file('leaf.csr'),
    ],
    dir,
  );
  writeFileSync(
    file('leaf.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      file('leaf.csr'),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      file('leaf.ext'),
      '-out',
      file('leaf.pem'),
    ],
    dir,
  );
  return {
    caFile: file('ca.pem'),
    key: readFileSync(file('leaf.key'), 'utf8'),
    cert: readFileSync(file('leaf.pem'), 'utf8'),
  };
}
