// alarmkit calibration twin after a deploy that removed FidDeploy's alarm(): the main module of the
// config WorkerdProcess.redeploy("v2") renders. Everything else is worker.js as it is; the explicit
// export below takes the name FidDeploy from worker.js's own class (an explicit export wins over
// `export *`), so the FIDDEPLOY namespace keeps its className and uniqueKey, and its stored alarms.
export * from "./worker.js";
export { default, FidNoAlarm as FidDeploy } from "./worker.js";
