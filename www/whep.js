// WHEP playback: negotiates a receive-only WebRTC session for one camera
// through the node's POST /api/whep/{id}, and ends it on close.

/** Waits until ICE gathering is complete (or 2 s), so the offer carries its candidates. */
function gathered(pc) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (pc.iceGatheringState === 'complete') {
        pc.removeEventListener('icegatheringstatechange', done);
        resolve();
      }
    };
    pc.addEventListener('icegatheringstatechange', done);
    setTimeout(resolve, 2000);
  });
}

/** The error message of a failed API answer, in plain words. */
async function failure(response) {
  try {
    const body = await response.json();
    if (body && typeof body.error === 'string') return body.error;
  } catch (_) {
    // Not JSON: fall through to the status.
  }
  return `the node answered ${response.status}`;
}

/**
 * Starts watching `camera` ("main" or "sub" stream) in `video`.
 * Resolves to { close() }; rejects with an Error whose message is fit to show.
 */
export async function watch(video, camera, stream = 'main') {
  const pc = new RTCPeerConnection();
  pc.addTransceiver('video', { direction: 'recvonly' });
  pc.addTransceiver('audio', { direction: 'recvonly' });
  const media = new MediaStream();
  pc.addEventListener('track', (event) => {
    media.addTrack(event.track);
    if (video.srcObject !== media) video.srcObject = media;
  });
  let session = null;
  const close = () => {
    pc.close();
    // keepalive: the DELETE still goes out when close() runs as the page unloads.
    if (session) fetch(session, { method: 'DELETE', keepalive: true }).catch(() => {});
    session = null;
  };
  try {
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    const query = stream === 'sub' ? '?stream=sub' : '';
    const response = await fetch(`/api/whep/${encodeURIComponent(camera)}${query}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/sdp' },
      body: pc.localDescription.sdp,
    });
    if (response.status !== 201) throw new Error(await failure(response));
    session = response.headers.get('Location');
    await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
  } catch (error) {
    close();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return { close, peer: pc };
}
