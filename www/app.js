// nvr-node's browser UI: the node header and four views (views.js): Live (the grid),
// Review (events with their clips), Recordings, and Settings (cameras, the add form,
// notifications, this node). Plain modules, no build step;
// everything from the node itself.

import { subscribe, startRefreshing } from './store.js';
import { renderHeader } from './header.js';
import { renderCameras, setUpCameras } from './cameras.js';
import { setUpAddForm, foldAddForm, renderAddForm } from './addform.js';
import { setUpDiscover } from './discover.js';
import { renderEvents, setUpEvents } from './events.js';
import { setUpLive, updateLive } from './liveview.js';
import { renderGrid, setUpGrid } from './grid.js';
import { setUpRecordings, updateRecordings } from './recordings.js';
import { setUpClip } from './clip.js';
import { renderAlerts, setUpAlerts } from './alerts.js';
import { setUpSettings } from './settings.js';
import { startViews } from './views.js';

let firstStatus = true;
let cameraCount = 0;

subscribe((state) => {
  renderHeader(state);
  renderGrid(state);
  renderCameras(state);
  renderAddForm(state);
  renderEvents(state);
  renderAlerts(state);
  updateLive(state.cameras, state.status);
  updateRecordings(state);
  if (state.status && cameraCount > 0 && state.cameras.size === 0) foldAddForm(false);
  if (state.status) cameraCount = state.cameras.size;
  if (firstStatus && state.status) {
    firstStatus = false;
    document.body.classList.add('loaded');
    foldAddForm(state.cameras.size > 0);
    // A link to one camera (from Home Assistant): its card, once drawn.
    if (location.hash.startsWith('#camera-')) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  }
});

setUpCameras();
setUpAddForm();
setUpDiscover();
setUpEvents();
setUpLive();
setUpGrid();
setUpRecordings();
setUpClip();
setUpAlerts();
setUpSettings();
startViews();
startRefreshing();
