// "Classify what moves" and the kinds of event, in the add form and the edit
// dialog (ids `${prefix}-classify`, `${prefix}-kinds`): where the node has no
// classifier the box is off and cannot be ticked, and a hint says why; the
// kinds can be changed only while it is on.

import { $, setText } from './dom.js';

export const KIND_NAMES = ['person', 'vehicle', 'animal', 'package'];

export function classifierInstalled(status) {
  return Boolean(status?.classifier?.installed);
}

const kindBoxes = (prefix) => [...$(`${prefix}-kinds`).querySelectorAll('input[type="checkbox"]')];

/** Enables what can be changed, and says why the rest cannot. */
export function syncClassify(prefix, installed) {
  const box = $(`${prefix}-classify`);
  box.disabled = !installed;
  for (const kind of kindBoxes(prefix)) kind.disabled = !installed || !box.checked;
  setText(
    $(`${prefix}-classify-hint`),
    installed
      ? 'Events become person, vehicle, animal or package, worked out on this node; an event of a kind left unticked stays motion.'
      : 'The classifier is not installed on this node, so every event stays motion. docs/install.md says how to install it.',
  );
}

/** Shows `classify` and `kinds` (a camera's, or the defaults). */
export function setClassify(prefix, { classify, kinds }, installed) {
  $(`${prefix}-classify`).checked = Boolean(classify);
  const wanted = Array.isArray(kinds) ? kinds : KIND_NAMES;
  for (const kind of kindBoxes(prefix)) kind.checked = wanted.includes(kind.value);
  syncClassify(prefix, installed);
}

/** What the controls say: `classify`, and the kinds ticked, in the node's order. */
export function readClassify(prefix) {
  return {
    classify: $(`${prefix}-classify`).checked,
    kinds: kindBoxes(prefix).filter((k) => k.checked).map((k) => k.value),
  };
}

/** Keeps the kinds' state in step with the box. */
export function watchClassify(prefix, installed) {
  $(`${prefix}-classify`).addEventListener('change', () => syncClassify(prefix, installed()));
}
