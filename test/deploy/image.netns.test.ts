// `make image` as an operator runs it: with buildah (vfs storage, no daemon) and the base
// image it builds and tags the image the DaemonSet names; without the base image it says
// so, builds nothing, and hands over to `make image-check`. Tests reach no registry:
// IMAGE_PULL=never lets buildah use only a base image already in its storage (none on this
// machine or in CI, so the fallback is what runs here). Under `make -n` the recipe still
// runs (it calls $(MAKE)), buildah and all, and the image-check it hands over to prints its
// command instead of running it: image-check itself (two minutes of npm ci and make build
// in a scratch copy) is CI's third step (.ci/run), not run again by each suite run.
// Root: buildah.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { privileged } from '../helpers/netns.js';

const { skip } = privileged();

const make = (...a: string[]) =>
  spawnSync('make', ['--no-print-directory', ...a], { encoding: 'utf8', timeout: 400_000 });

describe.skipIf(skip)('make image', () => {
  it('builds the tagged image, or says why it cannot and runs image-check', () => {
    const tag = make('-s', 'image-name').stdout.trim();
    expect(tag).toMatch(/^ghcr\.io\/fibkeeper\/fibkeeper:/);
    const images = () =>
      spawnSync(
        'buildah',
        ['--storage-driver', 'vfs', 'images', '--format', '{{.Name}}:{{.Tag}}'],
        {
          encoding: 'utf8',
        },
      ).stdout;
    const r = make('-n', 'image', 'IMAGE_PULL=never');
    expect(r.status, r.stdout + r.stderr).toBe(0);
    if (!/^make image: no image built;/m.test(r.stdout)) {
      expect(r.stdout).toContain(`built ${tag} `);
      expect(images().split('\n')).toContain(tag);
      return;
    }
    console.log('make image: no base image here, the fallback was checked');
    expect(r.stdout).toMatch(
      /^make image: the base image node:24[^ ]*@sha256:[0-9a-f]{64} is not available \(no registry access\?\): \S/m,
    );
    expect(r.stdout).toMatch(/^make image: no image built; running make image-check instead/m);
    // handed over to image-check: its recipe, the last thing make printed
    expect(r.stdout).toMatch(/\nnode scripts\/dockerfile-build\.mjs\n$/);
    expect(images().split('\n')).not.toContain(tag);
  }, 420_000);
});
