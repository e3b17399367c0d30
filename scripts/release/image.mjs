// The container image, from Debian's packages alone (no registry base image): mmdebstrap installs
// Debian bookworm's Essential set, infiniband-diags, tini, passwd and the release's own .deb (whose
// postinst creates the user infiniband-exporter) into one root file system, which becomes the one
// layer of an OCI image, written as an OCI archive (a tar of an OCI image layout: `podman load`,
// `skopeo copy oci-archive:...`, `docker load` from Docker 25 on). Labels, entry point and command
// are the Dockerfile's, with the binary in place of `node ... dist/main.js` and the Node.js flags
// in NODE_OPTIONS; the user is given by number, so that Kubernetes can check runAsNonRoot.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { PROJECT, run } from './tools.mjs';

export const SUITE = 'bookworm';
const MIRRORS = [
  `deb http://deb.debian.org/debian ${SUITE} main`,
  `deb http://deb.debian.org/debian ${SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${SUITE}-security main`,
];
const PORT = 10460;

/** The image's name without tag: package.json's config.image, which deploy/kubernetes uses too. */
export function imageName() {
  return JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')).config.image;
}

/** Hashes what passes through. */
function digesting(hash) {
  return async function* (source) {
    for await (const chunk of source) {
      hash.update(chunk);
      yield chunk;
    }
  };
}

/** Writes `content` as a blob of the layout; its descriptor. */
function blob(layout, mediaType, content) {
  const digest = createHash('sha256').update(content).digest('hex');
  writeFileSync(path.join(layout, 'blobs/sha256', digest), content);
  return { mediaType, digest: `sha256:${digest}`, size: content.length };
}

/** The root file system as a tar (SOURCE_DATE_EPOCH: mmdebstrap sorts it and clamps its times). */
async function rootFileSystem(work, deb) {
  const tar = path.join(work, 'rootfs.tar');
  await run('mmdebstrap', [
    '--quiet',
    '--variant=essential',
    `--include=${deb}`,
    // Makes the .deb visible to dpkg inside the chroot under its own path, and removes it after.
    '--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount',
    '--include=infiniband-diags,tini,passwd',
    // What node:*-slim leaves out too: documentation (not the copyrights), man pages, translations.
    '--dpkgopt=path-exclude=/usr/share/doc/*',
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    '--dpkgopt=path-exclude=/usr/share/man/*',
    '--dpkgopt=path-exclude=/usr/share/locale/*',
    // No device nodes (the runtime makes /dev), nor the build host's resolv.conf and hostname.
    '--skip=output/dev',
    '--customize-hook=rm -f "$1"/etc/resolv.conf "$1"/etc/hostname',
    SUITE,
    tar,
    ...MIRRORS,
  ]);
  return tar;
}

/** uid:gid of `user` in the tar's /etc/passwd. */
async function userIds(tar, user) {
  const passwd = await run('tar', ['-xOf', tar, './etc/passwd']);
  const entry = passwd.split('\n').find((line) => line.startsWith(`${user}:`));
  if (entry === undefined) throw new Error(`the image has no user ${user}: did the .deb's postinst run?`);
  const [, , uid, gid] = entry.split(':');
  return `${uid}:${gid}`;
}

/** Builds the OCI archive into `out` from the .deb `deb`; `nodeFlags` go into NODE_OPTIONS, `glibcTunables` into GLIBC_TUNABLES. */
export async function buildImage({ work, out, meta, deb, nodeFlags, glibcTunables }) {
  mkdirSync(work, { recursive: true });
  const tar = await rootFileSystem(work, deb);
  const layout = path.join(work, 'layout');
  mkdirSync(path.join(layout, 'blobs/sha256'), { recursive: true });

  const diffId = createHash('sha256');
  const layerDigest = createHash('sha256');
  const layerFile = path.join(layout, 'blobs/sha256/layer');
  await pipeline(createReadStream(tar), digesting(diffId), createGzip({ level: 6 }), digesting(layerDigest), createWriteStream(layerFile));
  const layerHex = layerDigest.digest('hex');
  renameSync(layerFile, path.join(layout, 'blobs/sha256', layerHex));
  const layer = {
    mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
    digest: `sha256:${layerHex}`,
    size: statSync(path.join(layout, 'blobs/sha256', layerHex)).size,
  };

  const created = new Date(meta.epoch * 1000).toISOString();
  const reference = `${imageName()}:${meta.version}`;
  const config = {
    created,
    architecture: 'amd64',
    os: 'linux',
    config: {
      User: await userIds(tar, 'infiniband-exporter'),
      ExposedPorts: { [`${PORT}/tcp`]: {} },
      Env: [
        'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        `NODE_OPTIONS=${nodeFlags.join(' ')}`,
        `GLIBC_TUNABLES=${glibcTunables}`,
      ],
      Entrypoint: ['/usr/bin/tini', '--', '/usr/bin/infiniband-exporter'],
      Cmd: ['--path.sysfs=/host/sys'],
      WorkingDir: '/',
      Labels: {
        'org.opencontainers.image.title': meta.name,
        'org.opencontainers.image.description': meta.description,
        'org.opencontainers.image.licenses': meta.license,
        'org.opencontainers.image.version': meta.version,
        'org.opencontainers.image.revision': meta.revision,
        'org.opencontainers.image.source': meta.homepage,
        'org.opencontainers.image.created': created,
      },
    },
    rootfs: { type: 'layers', diff_ids: [`sha256:${diffId.digest('hex')}`] },
    history: [
      {
        created,
        created_by: `mmdebstrap --variant=essential ${SUITE}: infiniband-diags, tini, passwd, ${path.basename(deb)} (scripts/release/image.mjs)`,
      },
    ],
  };
  const configBlob = blob(layout, 'application/vnd.oci.image.config.v1+json', Buffer.from(JSON.stringify(config)));
  const manifest = blob(
    layout,
    'application/vnd.oci.image.manifest.v1+json',
    Buffer.from(
      JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: configBlob, layers: [layer] }),
    ),
  );
  // The name: podman and skopeo read ref.name, containerd (and Docker's containerd store) its own key.
  const annotations = { 'org.opencontainers.image.ref.name': reference, 'io.containerd.image.name': reference };
  writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [{ ...manifest, annotations }] }),
  );
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));

  const archive = path.join(out, `${meta.name}-${meta.version}.oci.tar`);
  await run('tar', [
    '--create',
    '--file',
    archive,
    '--directory',
    layout,
    '--sort=name',
    `--mtime=@${meta.epoch}`,
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--mode=u=rwX,go=rX',
    '--format=ustar',
    'oci-layout',
    'index.json',
    'blobs',
  ]);
  return { archive, reference };
}
