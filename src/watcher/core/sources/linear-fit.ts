/**
 * Ordinary least squares of a value over time, for the forecasting sources (saturation): the
 * slope per millisecond and the value the line gives at a time. Times are taken relative to the
 * first point so epoch milliseconds do not swamp the sums. Pure.
 */

export interface Point {
  /** Epoch ms. */
  at: number;
  value: number;
}

export interface LinearFit {
  /** Change of the value per millisecond. */
  slope: number;
  /** The fitted value at time `at`. */
  valueAt(at: number): number;
}

/** The least-squares line through the points; undefined for fewer than 2 or all at one time. */
export function linearFit(points: readonly Point[]): LinearFit | undefined {
  const first = points[0];
  if (first === undefined || points.length < 2) return undefined;
  let sumT = 0;
  let sumV = 0;
  for (const point of points) {
    sumT += point.at - first.at;
    sumV += point.value;
  }
  const meanT = sumT / points.length;
  const meanV = sumV / points.length;
  let covariance = 0;
  let variance = 0;
  for (const point of points) {
    const dt = point.at - first.at - meanT;
    covariance += dt * (point.value - meanV);
    variance += dt * dt;
  }
  if (variance === 0) return undefined;
  const slope = covariance / variance;
  return { slope, valueAt: (at) => meanV + slope * (at - first.at - meanT) };
}
